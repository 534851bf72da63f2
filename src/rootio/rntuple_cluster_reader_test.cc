// RntupleClusterReader on RNTuples written by rootwrite (many clusters and pages) and by ROOT's
// importer: the columns decoded unit by unit from one vector read per unit equal
// ReadRntupleLeaf's over each unit's entries, a page several fields share is fetched
// once, and vector reads respect the range limit.
#include "rootio/rntuple_cluster_reader.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "rootio/root_file.h"
#include "rootwrite/sample_rntuple.h"
#include "rootwrite/sample_tree.h"
#include "testing/testing.h"

namespace ferry::rootio {
namespace {

struct Opened {
  std::unique_ptr<RootFile> file;
  std::unique_ptr<Rntuple> ntuple;
};

Opened Open(const std::string& path) {
  Opened o;
  o.file = std::move(*RootFile::OpenPath(path));
  o.ntuple = std::move(*Rntuple::Open(*o.file, "Events"));
  return o;
}

std::vector<std::string> FlatFields(const Rntuple& r) {
  std::vector<std::string> out;
  for (uint32_t id : r.TopLevelFields()) {
    if (ResolveRntupleLeaf(r, r.fields()[id].name).has_value()) {
      out.push_back(r.fields()[id].name);
    }
  }
  return out;
}

void ExpectUnitsEqualRangeReads(const Rntuple& r, uint32_t max_ranges) {
  const std::vector<std::string> names = FlatFields(r);
  ASSERT_GT(names.size(), 3u);
  auto reader = RntupleClusterReader::Make(r, names, {.max_ranges_per_read = max_ranges});
  ASSERT_TRUE(reader.has_value()) << reader.error().ToString();
  ASSERT_EQ(reader->units().size(), r.clusters().size());
  ByteVector buffer;
  RntupleScratch scratch;
  RntupleScratch range_scratch;
  std::vector<Column> columns;
  Column want;
  for (size_t u = 0; u < reader->units().size(); ++u) {
    const RntupleUnit& unit = reader->units()[u];
    std::set<std::pair<uint32_t, uint32_t>> fetched;
    for (const RntuplePageRef& p : unit.fetch) {
      EXPECT_TRUE(fetched.insert({p.column, p.page}).second) << "page fetched twice";
    }
    ASSERT_TRUE(reader->Fetch(u, &buffer).has_value());
    auto s = reader->Decode(u, buffer, &scratch, &columns);
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    for (size_t k = 0; k < names.size(); ++k) {
      ASSERT_TRUE(
          ReadRntupleLeaf(r, reader->leaves()[k], unit.entries, &range_scratch, &want).has_value());
      const Column& got = columns[k];
      EXPECT_EQ(got.num_entries, unit.entries.size()) << names[k];
      EXPECT_EQ(got.offsets, want.offsets) << names[k] << " unit " << u;
      EXPECT_TRUE(
          std::equal(got.bytes.begin(), got.bytes.end(), want.bytes.begin(), want.bytes.end()))
          << names[k] << " unit " << u;
    }
  }
}

TEST(RntupleClusterReader, UnitColumnsEqualRangeReadsOverManyClusters) {
  testing::TempDir dir;
  rootwrite::RntupleOptions o;
  o.page_bytes = 256;
  o.zipped_cluster_bytes = 8 << 10;
  o.check_entries = 50;
  const std::string path = dir.File("sample.root");
  ASSERT_TRUE(rootwrite::sample::WriteRntuple(path, rootwrite::sample::Fixed(), o, 3000));
  Opened in = Open(path);
  ASSERT_GT(in.ntuple->clusters().size(), 2u);
  const io::IoStats before = in.file->source().stats();
  ExpectUnitsEqualRangeReads(*in.ntuple, 7);
  EXPECT_GT(in.file->source().stats().vector_calls, before.vector_calls);
}

TEST(RntupleClusterReader, RootImporterMuons) {
  if (testing::RntupleDataDir().empty()) {
    GTEST_SKIP() << "data/rntuple not present";
  }
  Opened in = Open(testing::RntupleDataDir()
                   + "/Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root");
  ExpectUnitsEqualRangeReads(*in.ntuple, 1024);
  auto missing = RntupleClusterReader::Make(*in.ntuple, std::vector<std::string>{"Jet_pt"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace ferry::rootio
