#include "store/pick.h"

#include <gtest/gtest.h>

#include "rootio/root_file.h"
#include "store/converter.h"
#include "testing/testing.h"

namespace ferry::store {
namespace {

std::vector<uint8_t> EntryBytes(const rootio::Column& c, int64_t i) {
  auto [b, e] = c.EntryValues(i);
  size_t sz = c.value_size();
  return {c.bytes.begin() + static_cast<ptrdiff_t>(b * sz),
          c.bytes.begin() + static_cast<ptrdiff_t>(e * sz)};
}

// Picked events written as ROOT read back (with ferry's reader) equal the source TTree's.
TEST(Pick, WritesARootFileWithTheEventsInListOrder) {
  FERRY_REQUIRE_ROOT_DATA();
  for (const char* name : {"nano_dy.root", "nanoAOD_2015_CMS_Open_Data_ttbar.root"}) {
    const std::string src = testing::RootDataFile(name);
    testing::TempDir dir;
    ConvertOptions o;
    o.inputs = {src};
    o.out_dir = dir.path() + "/store";
    ASSERT_TRUE(Convert(o).has_value());
    auto store = std::move(*Store::Open(o.out_dir));
    auto in = std::move(*rootio::RootFile::OpenPath(src));
    auto tree = std::move(*in->OpenTree("Events"));
    auto run = *tree->ReadLeaf("run", tree->All());
    auto lumi = *tree->ReadLeaf("luminosityBlock", tree->All());
    auto event = *tree->ReadLeaf("event", tree->All());
    const std::vector<int64_t> entries = {7, 3, 31, 0, 12, 5, 39};
    std::vector<EventId> ids;
    for (int64_t e : entries) {
      auto k = static_cast<size_t>(e);
      ids.push_back({run.AsUint64(k), lumi.AsUint64(k), event.AsUint64(k)});
    }
    const std::string out = dir.File("picked.root");
    auto rep = WritePicked(*store, ids, {}, out);
    ASSERT_TRUE(rep.has_value()) << rep.error().ToString();
    EXPECT_EQ(rep->events, entries.size());
    auto picked_file = rootio::RootFile::OpenPath(out);
    ASSERT_TRUE(picked_file.has_value()) << picked_file.error().ToString();
    auto picked = std::move(*(*picked_file)->OpenTree("Events"));
    ASSERT_EQ(picked->entries(), static_cast<int64_t>(entries.size()));
    for (const ColumnSpec& c : store->schema().columns) {
      auto want = *tree->ReadLeaf(c.name, tree->All());
      auto got = picked->ReadLeaf(c.name, picked->All());
      ASSERT_TRUE(got.has_value()) << c.name << ": " << got.error().ToString();
      for (size_t i = 0; i < entries.size(); ++i) {
        ASSERT_EQ(EntryBytes(*got, static_cast<int64_t>(i)), EntryBytes(want, entries[i]))
            << name << " " << c.name;
      }
    }
    // A subset of columns brings its counters along.
    std::vector<std::string> names = {"Jet_pt", "MET_pt"};
    auto sub = WritePicked(*store, ids, *store->ResolveColumns(names), dir.File("sub.root"));
    ASSERT_TRUE(sub.has_value());
    EXPECT_EQ(sub->branches, 3u);
  }
}

}  // namespace
}  // namespace ferry::store
