// A generated dataset (ferry gen nanoaod: realistic run/lumi/event numbers, uneven lumis)
// through the store: every event and every branch read back by coordinate equals the TTree.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "gen/nanoaod_gen.h"
#include "rootio/root_file.h"
#include "store/converter.h"
#include "store/store.h"
#include "testing/testing.h"

namespace ferry::store {
namespace {

std::vector<uint8_t> EntryBytes(const rootio::Column& c, int64_t i) {
  auto [b, e] = c.EntryValues(i);
  size_t sz = c.value_size();
  return {c.bytes.begin() + static_cast<ptrdiff_t>(b * sz),
          c.bytes.begin() + static_cast<ptrdiff_t>(e * sz)};
}

TEST(GeneratedDataset, EveryEventEveryBranch) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir dir;
  gen::GenOptions g;
  g.template_path = testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root");
  g.out_dir = dir.File("gen");
  g.events = 6000;
  g.files = 2;
  g.measure_agc = false;
  auto rep = gen::GenerateNanoAod(g);
  ASSERT_TRUE(rep.has_value()) << rep.error().ToString();
  ConvertOptions o;
  for (const auto& f : rep->files) {
    o.inputs.push_back(f.path);
  }
  o.out_dir = dir.File("store");
  o.block_size = 16 * 1024;
  o.log2_ks = 10;
  auto conv = Convert(o);
  ASSERT_TRUE(conv.has_value()) << conv.error().ToString();
  EXPECT_EQ(conv->manifest.events, 6000u);
  EXPECT_GT(conv->manifest.lumi_extent, 1u);
  auto store = std::move(*Store::Open(o.out_dir, {.mode = IoMode::kMmap}));
  ASSERT_TRUE(store->Verify().has_value());
  std::vector<int32_t> all = *store->ResolveColumns({});
  for (const std::string& path : o.inputs) {
    auto file = std::move(*rootio::RootFile::OpenPath(path));
    auto tree = std::move(*file->OpenTree("Events"));
    auto run = *tree->ReadLeaf("run", tree->All());
    auto lumi = *tree->ReadLeaf("luminosityBlock", tree->All());
    auto event = *tree->ReadLeaf("event", tree->All());
    std::vector<int64_t> order(static_cast<size_t>(tree->entries()));
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = static_cast<int64_t>(i);
    }
    std::shuffle(order.begin(), order.end(), std::mt19937_64(6));
    std::vector<EventId> ids;
    for (int64_t e : order) {
      auto k = static_cast<size_t>(e);
      ids.push_back({run.AsUint64(k), lumi.AsUint64(k), event.AsUint64(k)});
    }
    std::vector<rootio::Column> got;
    auto st = store->ReadEvents(ids, all, &got);
    ASSERT_TRUE(st.has_value()) << st.error().ToString();
    for (size_t k = 0; k < all.size(); ++k) {
      const std::string& name = store->schema().columns[static_cast<size_t>(all[k])].name;
      rootio::Column want = *tree->ReadLeaf(name, tree->All());
      for (size_t i = 0; i < order.size(); ++i) {
        ASSERT_EQ(EntryBytes(got[k], static_cast<int64_t>(i)), EntryBytes(want, order[i]))
            << path << " " << name;
      }
    }
  }
  EXPECT_EQ(store->stats().reads, 0u);
}

}  // namespace
}  // namespace ferry::store
