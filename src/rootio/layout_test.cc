// The format-neutral layout (layout.h) of TTrees: made from the tree model, and from every real
// file in data/root.
#include "rootio/layout.h"

#include <gtest/gtest.h>

#include "rootio/root_file.h"
#include "rootio/tree.h"
#include "testing/testing.h"

namespace ferry::rootio {
namespace {

TEST(LayoutTest, ABasketPerUnitEmbeddedOnesLeftOut) {
  TreeInfo t;
  t.name = "Events";
  t.path = "dir/Events";
  t.entries = 30;
  Branch b;
  b.name = "x";
  b.baskets = {{0, 10, 500, 80, -1}, {10, 10, 700, 90, -1}, {20, 10, 0, 0, 0}};
  t.branches.push_back(b);
  const LayoutSet set = TreeLayout(t);
  EXPECT_EQ(set.name, "dir/Events");
  EXPECT_EQ(set.entries, 30);
  EXPECT_EQ(set.clusters, t.Clusters());
  ASSERT_EQ(set.columns.size(), 1u);
  EXPECT_EQ(set.FindColumn("x"), 0);
  EXPECT_EQ(set.FindColumn("y"), -1);
  const auto& u = set.columns[0].units;
  ASSERT_EQ(u.size(), 2u) << "the basket inside the TTree record is not a unit of its own";
  EXPECT_EQ(u[1].offset, 700u);
  EXPECT_EQ(u[1].bytes, 90u);
  EXPECT_EQ(u[1].first_entry, 10);
  EXPECT_EQ(u[1].end_entry(), 20);
}

TEST(LayoutTest, EveryRealFileHasAColumnPerBranchAndAUnitPerBasketRecord) {
  FERRY_REQUIRE_ROOT_DATA();
  size_t checked = 0;
  for (const std::string& path : testing::AllRootDataFiles()) {
    auto file = RootFile::OpenPath(path);
    ASSERT_TRUE(file) << path << ": " << file.error().ToString();
    auto sets = LoadLayout(**file);
    ASSERT_TRUE(sets) << path << ": " << sets.error().ToString();
    for (const LayoutSet& set : *sets) {
      auto tree = (*file)->OpenTree(set.name);
      ASSERT_TRUE(tree) << path << " " << set.name;
      const TreeInfo& info = (*tree)->info();
      ASSERT_EQ(set.columns.size(), info.branches.size()) << path;
      for (size_t b = 0; b < info.branches.size(); ++b) {
        size_t records = 0;
        for (const BasketRef& k : info.branches[b].baskets) {
          records += k.seek != 0 ? 1 : 0;
        }
        const auto& units = set.columns[b].units;
        EXPECT_EQ(units.size(), records) << path << " " << info.branches[b].name;
        for (size_t i = 1; i < units.size(); ++i) {
          EXPECT_LE(units[i - 1].end_entry(), units[i].first_entry) << path;
        }
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 10u);
}

}  // namespace
}  // namespace ferry::rootio
