// The format-neutral layout (layout.h) of TTrees — made from the tree model, and from every real
// file in data/root — and of RNTuples, from every real file in data/rntuple.
#include "rootio/layout.h"

#include <gtest/gtest.h>

#include "rootio/rntuple.h"
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

// The units of one RNTuple column: in entry order, each inside its cluster, and a page each with
// its bytes; for a column of a leaf field with one element per entry, exactly the entries.
void ExpectRntupleColumn(const Rntuple& nt,
                         const LayoutSet& set,
                         size_t c,
                         const std::string& what) {
  const std::vector<LayoutUnit>& units = set.columns[c].units;
  size_t u = 0;
  for (size_t k = 0; k < nt.clusters().size(); ++k) {
    const ClusterInfo& cluster = nt.clusters()[k];
    EXPECT_EQ(set.clusters[k].begin, static_cast<int64_t>(cluster.first_entry)) << what;
    if (c >= cluster.columns.size() || cluster.columns[c].suppressed) {
      continue;
    }
    const ColumnPages& pages = cluster.columns[c];
    const bool one_per_entry = pages.elements() == cluster.entries;
    int64_t entries = 0;
    for (const PageInfo& page : pages.pages) {
      ASSERT_LT(u, units.size()) << what;
      const LayoutUnit& unit = units[u++];
      EXPECT_EQ(unit.offset, page.locator.offset) << what;
      EXPECT_EQ(unit.bytes, page.stored_bytes()) << what;
      EXPECT_GE(unit.first_entry, set.clusters[k].begin) << what;
      EXPECT_LE(unit.end_entry(), set.clusters[k].end) << what;
      if (one_per_entry) {
        EXPECT_EQ(unit.entries, page.elements) << what;
      }
      entries += unit.entries;
    }
    EXPECT_EQ(entries, static_cast<int64_t>(cluster.entries)) << what << " cluster " << k;
  }
  EXPECT_EQ(u, units.size()) << what;
  for (size_t i = 1; i < units.size(); ++i) {
    EXPECT_LE(units[i - 1].end_entry(), units[i].first_entry) << what;
  }
}

TEST(LayoutTest, EveryRealRntupleHasAColumnPerPhysicalColumnAndAUnitPerPage) {
  size_t checked = 0;
  for (const std::string& path : testing::AllRntupleDataFiles()) {
    auto file = RootFile::OpenPath(path);
    ASSERT_TRUE(file) << path << ": " << file.error().ToString();
    auto sets = LoadLayout(**file);
    ASSERT_TRUE(sets) << path << ": " << sets.error().ToString();
    for (const LayoutSet& set : *sets) {
      auto nt = Rntuple::Open(**file, set.name);
      if (!nt) {
        continue;  // a TTree of the file
      }
      ASSERT_EQ(set.columns.size(), (*nt)->columns().size()) << path;
      ASSERT_EQ(set.clusters.size(), (*nt)->clusters().size()) << path;
      EXPECT_EQ(set.entries, static_cast<int64_t>((*nt)->entries())) << path;
      for (size_t c = 0; c < set.columns.size(); ++c) {
        ExpectRntupleColumn(**nt, set, c, path + " " + set.columns[c].name);
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 10u);
}

TEST(LayoutTest, RntupleColumnsAreNamedByFieldPathAndNumberedWhenAFieldHasSeveral) {
  auto file =
      RootFile::OpenPath(testing::RntupleDataFile("test_index_multicluster_rntuple_v1-0-0-0.root"));
  ASSERT_TRUE(file) << file.error().ToString();
  auto sets = LoadLayout(**file);
  ASSERT_TRUE(sets);
  ASSERT_EQ(sets->size(), 1u);
  const LayoutSet& set = sets->front();
  EXPECT_EQ(set.name, "ntuple");
  EXPECT_EQ(set.clusters.size(), 3u);
  EXPECT_GE(set.FindColumn("int_vector"), 0) << "the collection's offsets";
  EXPECT_GE(set.FindColumn("int_vector._0"), 0) << "its items";
}

}  // namespace
}  // namespace ferry::rootio
