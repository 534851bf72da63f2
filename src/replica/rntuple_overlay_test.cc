// The overlay writer with the RNTuple part against every real RNTuple file of data/rntuple: the
// virtual file it lays out reads, field by field, to the original's values; its metadata is ours
// only where it has to be.
#include "replica/rntuple_overlay.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/byte_source.h"
#include "rootio/rntuple.h"
#include "rootio/rntuple_envelope.h"
#include "rootwrite/rntuple_envelope_writer.h"
#include "testing/testing.h"

namespace ferry::replica {
namespace {

std::vector<uint8_t> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Opened {
  std::unique_ptr<io::MemorySource> src;
  std::unique_ptr<rootio::RootFile> file;
};

Opened OpenBytes(std::vector<uint8_t> bytes) {
  Opened o;
  o.src = std::make_unique<io::MemorySource>(std::move(bytes));
  auto f = rootio::RootFile::Open(*o.src);
  EXPECT_TRUE(f.has_value()) << f.error().ToString();
  if (f) {
    o.file = std::move(*f);
  }
  return o;
}

// Every top-level field of every RNTuple as JSON, entry by entry ("" for a field this reader
// does not decode, which must then fail the same way in both files).
std::vector<std::string> Values(const rootio::RootFile& f) {
  std::vector<std::string> out;
  auto names = rootio::RntupleNames(f);
  EXPECT_TRUE(names.has_value());
  for (const std::string& name : names.value_or(std::vector<std::string>{})) {
    auto r = rootio::Rntuple::Open(f, name);
    EXPECT_TRUE(r.has_value()) << name << ": " << r.error().ToString();
    if (!r) {
      continue;
    }
    // The hundred-million-entry file: its last entries are enough.
    const uint64_t n = (*r)->entries();
    const uint64_t first = n > 100000 ? n - 1000 : 0;
    for (uint32_t id : (*r)->TopLevelFields()) {
      auto v = (*r)->Read(id, first, n - first);
      out.push_back(name + "." + (*r)->FieldPath(id));
      if (!v) {
        out.push_back("error " + v.error().ToString());
        continue;
      }
      for (const rootio::RntupleValue& x : *v) {
        out.push_back(x.ToJson());
      }
    }
  }
  return out;
}

TEST(RntupleOverlay, PageListsSerialiseBackToTheirBytes) {
  if (testing::RntupleDataDir().empty()) {
    GTEST_SKIP() << "data/rntuple not present";
  }
  size_t lists = 0;
  for (const std::string& path : testing::AllRntupleDataFiles()) {
    SCOPED_TRACE(path);
    Opened o = OpenBytes(Slurp(path));
    ASSERT_TRUE(o.file);
    auto found = rootio::FindRntuples(*o.file);
    ASSERT_TRUE(found.has_value());
    for (const rootio::RntupleEntry& e : *found) {
      auto s = LoadRntupleRecord(*o.file, e.path);
      ASSERT_TRUE(s.has_value()) << s.error().ToString();
      for (size_t g = 0; g < s->page_lists.size(); ++g) {
        const rootio::ClusterGroup& group = s->parsed_footer.groups[g];
        auto env = rootio::ReadEnvelope(*o.src, group.page_list, rootio::EnvelopeType::kPageList,
                                        s->anchor.max_key_size, "page list");
        ASSERT_TRUE(env.has_value());
        EXPECT_EQ(rootwrite::SerializePageList(s->page_lists[g]),
                  std::vector<uint8_t>(env->bytes.begin(), env->bytes.end()));
        ++lists;
      }
    }
  }
  EXPECT_GE(lists, 25u);
}

TEST(RntupleOverlay, EveryFileRelocatedReadsToTheOriginalValues) {
  if (testing::RntupleDataDir().empty()) {
    GTEST_SKIP() << "data/rntuple not present";
  }
  const codec::Setting settings[] = {
      {codec::Algorithm::kLz4, 4}, {codec::Algorithm::kZstd, 3}, {codec::Algorithm::kNone, 0}};
  for (const std::string& path : testing::AllRntupleDataFiles()) {
    SCOPED_TRACE(path);
    const std::vector<uint8_t> bytes = Slurp(path);
    Opened original = OpenBytes(bytes);
    ASSERT_TRUE(original.file);
    const std::vector<std::string> want = Values(*original.file);
    for (const codec::Setting& s : settings) {
      SCOPED_TRACE(s.ToString());
      auto moved = RelocateInMemory(bytes, s);
      ASSERT_TRUE(moved.has_value()) << moved.error().ToString();
      EXPECT_GT(moved->size(), bytes.size());
      Opened relocated = OpenBytes(*moved);
      ASSERT_TRUE(relocated.file);
      EXPECT_EQ(Values(*relocated.file), want);
      // The pages really moved: every page locator points past the original end.
      auto found = rootio::FindRntuples(*relocated.file);
      ASSERT_TRUE(found.has_value());
      for (const rootio::RntupleEntry& e : *found) {
        auto r = rootio::Rntuple::Open(*relocated.file, e.path);
        ASSERT_TRUE(r.has_value());
        for (const rootio::ClusterInfo& c : (*r)->clusters()) {
          for (const rootio::ColumnPages& col : c.columns) {
            for (const rootio::PageInfo& p : col.pages) {
              EXPECT_GE(p.locator.offset, bytes.size());
            }
          }
        }
      }
    }
  }
}

TEST(RntupleOverlay, ARangeMovedInPartIsRefused) {
  if (testing::RntupleDataDir().empty()) {
    GTEST_SKIP() << "data/rntuple not present";
  }
  // The first column range of several pages in the data set: move its first page only.
  for (const std::string& path : testing::AllRntupleDataFiles()) {
    const std::vector<uint8_t> bytes = Slurp(path);
    Opened o = OpenBytes(bytes);
    ASSERT_TRUE(o.file);
    auto found = rootio::FindRntuples(*o.file);
    ASSERT_TRUE(found.has_value() && !found->empty());
    auto s = LoadRntupleRecord(*o.file, found->front().path);
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    const auto refs = s->pages();
    for (size_t c = 0; c < refs.size(); ++c) {
      if (refs[c].size() < 2 || refs[c][1].page != 1) {
        continue;
      }
      SCOPED_TRACE(path + " column " + std::to_string(c));
      const uint32_t t = 0;
      OverlayWriter w(bytes.size(), {codec::Algorithm::kLz4, 4}, MakeRntupleOverlay({*s}));
      ASSERT_TRUE(w.Start().has_value());
      const rootio::PageInfo& page = s->Page(refs[c][0]);
      const auto at = static_cast<ptrdiff_t>(page.locator.offset);
      const std::vector<uint8_t> stored(
          bytes.begin() + at, bytes.begin() + at + static_cast<ptrdiff_t>(page.stored_bytes()));
      ByteVector out;
      ASSERT_TRUE(w.AddUnit(t, static_cast<int32_t>(c), 0, stored, &out).has_value());
      EXPECT_FALSE(w.AddUnit(t, static_cast<int32_t>(c), 0, stored, &out).has_value());
      auto overlay = w.Finish(std::span<const uint8_t>(bytes).first(100));
      ASSERT_FALSE(overlay.has_value());
      EXPECT_EQ(overlay.error().code(), ErrorCode::kInvalidArgument);
      return;
    }
  }
  FAIL() << "no column range of several pages in data/rntuple";
}

}  // namespace
}  // namespace ferry::replica
