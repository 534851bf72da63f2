// The RNTuple bulk column reads (rootio/rntuple_columns.h) against the values the sample was
// written from: every flat field, in plain and split encodings, over ranges crossing clusters.
// Here rather than in rootio because the files come from the writer.
#include "rootio/rntuple_columns.h"

#include <gtest/gtest.h>

#include "rootio/root_file.h"
#include "rootwrite/sample_rntuple.h"
#include "rootwrite/sample_tree.h"
#include "testing/testing.h"

namespace ferry::rootwrite {
namespace {

// Values and entry shapes equal; types may differ (a counter reads as its cardinality).
void ExpectSameColumn(const rootio::Column& want,
                      const rootio::Column& got,
                      const std::string& name) {
  ASSERT_EQ(got.num_entries, want.num_entries) << name;
  ASSERT_EQ(got.jagged, want.jagged) << name;
  ASSERT_EQ(got.num_values(), want.num_values()) << name;
  if (want.jagged) {
    EXPECT_EQ(got.offsets, want.offsets) << name;
  } else {
    EXPECT_EQ(got.fixed_len, want.fixed_len) << name;
  }
  for (size_t k = 0; k < want.num_values(); ++k) {
    ASSERT_EQ(got.AsDouble(k), want.AsDouble(k)) << name << " value " << k;
  }
}

class BulkColumns : public ::testing::TestWithParam<const char*> {};

TEST_P(BulkColumns, EveryFlatFieldReadsAsTheWrittenColumn) {
  testing::TempDir dir;
  RntupleOptions o;
  o.page_bytes = 256;
  o.zipped_cluster_bytes = 8 << 10;
  o.check_entries = 50;
  const std::string path = dir.File("sample.root");
  const codec::Setting setting = *codec::Setting::Parse(GetParam());
  ASSERT_TRUE(sample::WriteRntuple(path, sample::Fixed(setting), o, 3000).has_value());
  auto file = rootio::RootFile::OpenPath(path);
  ASSERT_TRUE(file.has_value());
  auto r = rootio::Rntuple::Open(**file, "Events");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_GT((*r)->clusters().size(), 2u);
  const std::vector<BranchSpec> specs = sample::RntupleBranches();
  rootio::RntupleScratch scratch;
  size_t read = 0;
  for (auto [first, count] : {std::pair<int64_t, int64_t>{0, 3000}, {333, 1700}, {2999, 1}}) {
    const std::vector<rootio::Column> want = sample::RntupleBatch(first, count);
    for (size_t i = 0; i < specs.size(); ++i) {
      auto leaf = rootio::ResolveRntupleLeaf(**r, specs[i].name);
      ASSERT_TRUE(leaf.has_value()) << specs[i].name << ": " << leaf.error().ToString();
      rootio::Column got;
      auto s = rootio::ReadRntupleLeaf(**r, *leaf, {first, first + count}, &scratch, &got);
      ASSERT_TRUE(s.has_value()) << specs[i].name << ": " << s.error().ToString();
      ExpectSameColumn(want[i], got, specs[i].name);
      ++read;
    }
  }
  EXPECT_GT(read, 20u);
}

INSTANTIATE_TEST_SUITE_P(RntupleColumns, BulkColumns, ::testing::Values("none", "zlib:1", "lz4"));

TEST(RntupleColumns, AFlippedPageByteIsCorruption) {
  testing::TempDir dir;
  const std::string path = dir.File("none.root");
  ASSERT_TRUE(sample::WriteRntuple(path, sample::Fixed({codec::Algorithm::kNone, 0}), {}, 500));
  uint64_t page_at = 0;
  {
    auto file = rootio::RootFile::OpenPath(path);
    auto r = rootio::Rntuple::Open(**file, "Events");
    auto leaf = rootio::ResolveRntupleLeaf(**r, "d");
    ASSERT_TRUE(leaf.has_value());
    page_at = (*r)->clusters()[0].columns[leaf->value_column].pages[0].locator.offset;
  }
  std::vector<uint8_t> bytes = testing::ReadWholeFile(path);
  bytes[page_at + 3] ^= 0x10;
  testing::WriteWholeFile(path, bytes);
  auto file = rootio::RootFile::OpenPath(path);
  auto r = rootio::Rntuple::Open(**file, "Events");
  ASSERT_TRUE(r.has_value());
  rootio::RntupleScratch scratch;
  rootio::Column got;
  auto s =
      rootio::ReadRntupleLeaf(**r, *rootio::ResolveRntupleLeaf(**r, "d"), {0, 10}, &scratch, &got);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), ErrorCode::kCorruption) << s.error().ToString();
  EXPECT_NE(s.error().ToString().find("checksum"), std::string::npos) << s.error().ToString();
}

}  // namespace
}  // namespace ferry::rootwrite
