#include "readahead/read_ahead.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "rootio/layout.h"
#include "rootio/root_file.h"
#include "testing/testing.h"

namespace ferry::readahead {
namespace {

// One tree, `branches` branches with one basket of `per_basket` entries per cluster, baskets of
// branch b in cluster c at seek 1000 + (c * branches + b) * 100, 100 bytes each.
// As ReadAhead sees it: the tree's layout (rootio/layout.h).
rootio::LayoutSet Tree(int branches, int clusters, int64_t per_basket) {
  rootio::TreeInfo t;
  t.name = "Events";
  t.entries = clusters * per_basket;
  for (int b = 0; b < branches; ++b) {
    rootio::Branch br;
    br.name = "b" + std::to_string(b);
    for (int c = 0; c < clusters; ++c) {
      rootio::BasketRef k;
      k.first_entry = c * per_basket;
      k.num_entries = per_basket;
      k.seek = 1000 + static_cast<uint64_t>(c * branches + b) * 100;
      k.bytes = 100;
      br.baskets.push_back(k);
    }
    t.branches.push_back(br);
  }
  return rootio::TreeLayout(t);
}

fetch::Range Basket(int branches, int branch, int cluster) {
  return {1000 + static_cast<uint64_t>(cluster * branches + branch) * 100, 100};
}

TEST(ReadAhead, PredictsTheNextClustersPagesOfAnRntuple) {
  // 12 clusters of two columns ("one", and the vector's offsets and items): a pass that read
  // cluster 0's pages of "one" gets the next clusters' pages of "one" predicted, and no other.
  auto file = rootio::RootFile::OpenPath(
      testing::RntupleDataFile("test_multiple_cluster_groups_rntuple_v1-0-0-0.root"));
  ASSERT_TRUE(file) << file.error().ToString();
  auto sets = rootio::LoadLayout(**file);
  ASSERT_TRUE(sets);
  ASSERT_EQ(sets->size(), 1u);
  const rootio::LayoutSet set = sets->front();
  const int32_t one = set.FindColumn("one");
  ASSERT_GE(one, 0);
  const std::vector<rootio::LayoutUnit>& units = set.columns[static_cast<size_t>(one)].units;
  ASSERT_GE(units.size(), 6u);
  ReadAhead ra(*sets, 3);
  std::vector<fetch::Range> ahead;
  ra.OnRead(std::vector<fetch::Range>{{units[0].offset, units[0].bytes}}, ahead);
  ASSERT_FALSE(ahead.empty());
  for (const fetch::Range& r : ahead) {
    bool of_one = false;
    for (size_t i = 1; i < units.size(); ++i) {
      of_one = of_one || (r.offset == units[i].offset && r.length == units[i].bytes);
    }
    EXPECT_TRUE(of_one) << "predicted " << r.offset << "+" << r.length << " is no page of 'one'";
  }
  EXPECT_EQ(ahead.front().offset, units[1].offset) << "the next cluster's page first";
}

TEST(ReadAhead, PredictsTheSameBranchesOfTheNextClusters) {
  ReadAhead ra({Tree(5, 20, 1000)}, 3);
  EXPECT_EQ(ra.baskets(), 100u);
  std::vector<fetch::Range> ahead;
  // Cluster 0 of branches 1 and 3, plus a metadata read that is no basket.
  ra.OnRead(std::vector<fetch::Range>{{0, 500}, Basket(5, 1, 0), Basket(5, 3, 0)}, ahead);
  std::vector<fetch::Range> want;
  for (int c = 1; c <= 3; ++c) {
    want.push_back(Basket(5, 1, c));
    want.push_back(Basket(5, 3, c));
  }
  EXPECT_EQ(ahead, want);
  // The client reads cluster 1 (already predicted): only cluster 4 is new.
  ahead.clear();
  ra.OnRead(std::vector<fetch::Range>{Basket(5, 1, 1), Basket(5, 3, 1)}, ahead);
  EXPECT_EQ(ahead, (std::vector<fetch::Range>{Basket(5, 1, 4), Basket(5, 3, 4)}));
  // Nothing is predicted twice, nothing past the last basket.
  ahead.clear();
  for (int c = 2; c < 20; ++c) {
    ra.OnRead(std::vector<fetch::Range>{Basket(5, 1, c), Basket(5, 3, c)}, ahead);
  }
  EXPECT_EQ(ahead.size(), 2u * 15);  // clusters 5..19
  for (size_t i = 1; i < ahead.size(); ++i) {
    EXPECT_NE(ahead[i], ahead[i - 1]);
  }
}

TEST(ReadAhead, MergedChunksAndPartialReadsKeepTheLearnedBranches) {
  ReadAhead ra({Tree(3, 10, 500)}, 1);
  std::vector<fetch::Range> ahead;
  // One chunk covering the adjacent baskets of branches 0..2 of cluster 0.
  ra.OnRead(std::vector<fetch::Range>{{1000, 300}}, ahead);
  EXPECT_EQ(ahead, (std::vector<fetch::Range>{Basket(3, 0, 1), Basket(3, 1, 1), Basket(3, 2, 1)}));
  // A read of branch 0 only still brings the branches of the read before.
  ahead.clear();
  ra.OnRead(std::vector<fetch::Range>{Basket(3, 0, 1)}, ahead);
  EXPECT_EQ(ahead, (std::vector<fetch::Range>{Basket(3, 0, 2), Basket(3, 1, 2), Basket(3, 2, 2)}));
}

TEST(ReadAhead, IgnoresWhatIsNotABasket) {
  ReadAhead ra({Tree(2, 4, 10)}, 4);
  std::vector<fetch::Range> ahead;
  ra.OnRead(std::vector<fetch::Range>{{0, 999}, {5000, 10}}, ahead);
  EXPECT_TRUE(ahead.empty());
  ReadAhead none({}, 4);
  none.OnRead(std::vector<fetch::Range>{{1000, 100}}, ahead);
  EXPECT_TRUE(ahead.empty());
}

TEST(ReadAhead, SeedsAFileNotReadYetWithTheBranchesOfItsTree) {
  ReadAhead ra({Tree(4, 10, 100)}, 2);
  EXPECT_EQ(ra.TreeNames(), std::vector<std::string>{"Events"});
  std::vector<fetch::Range> ahead;
  ra.Seed("Other", {"b1"}, ahead);
  ra.Seed("Events", {"nope"}, ahead);
  EXPECT_TRUE(ahead.empty());
  // Clusters are one tree of 1000 entries here (no cluster information): the first `units`
  // clusters are the whole tree.
  ra.Seed("Events", {"b2", "b0"}, ahead);
  EXPECT_EQ(ahead.size(), 20u);  // both branches, all 10 baskets
  // Once the client read, seeds are ignored and its own reads lead.
  ReadAhead read({Tree(4, 10, 100)}, 2);
  std::map<std::string, std::vector<std::string>> learned;
  ahead.clear();
  read.OnRead(std::vector<fetch::Range>{Basket(4, 3, 0)}, ahead, &learned);
  EXPECT_EQ(learned, (std::map<std::string, std::vector<std::string>>{{"Events", {"b3"}}}));
  const size_t n = ahead.size();
  read.Seed("Events", {"b0"}, ahead);
  EXPECT_EQ(ahead.size(), n);
  // The same branches again teach nothing new.
  learned.clear();
  read.OnRead(std::vector<fetch::Range>{Basket(4, 3, 1)}, ahead, &learned);
  EXPECT_TRUE(learned.empty());
}

TEST(BranchMemory, RecallsOrWaitsForTheNextLesson) {
  BranchMemory m;
  std::vector<std::string> got;
  EXPECT_TRUE(m.RecallOrWait("T", [&](const std::vector<std::string>& b) {
                 got = b;
                 return true;
               }).empty());
  m.Learn("U", {"x"});
  EXPECT_TRUE(got.empty());
  m.Learn("T", {"a", "b"});
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b"}));
  got.clear();
  m.Learn("T", {"c"});  // a waiter is called once
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(m.RecallOrWait("T", [](const std::vector<std::string>&) { return true; }),
            std::vector<std::string>{"c"});
}

}  // namespace
}  // namespace ferry::readahead
