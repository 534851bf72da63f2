// The predictor's windowed interface (what the client plug-in uses) on recorded read sequences:
// TTreeCache-like cluster reads, uproot-like branch-by-branch reads, readers with reads out of
// order, random reads, and a change of the branches read in the middle of a pass.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "readahead/read_ahead.h"
#include "rootio/layout.h"

namespace ferry::readahead {
namespace {

constexpr uint64_t kBasket = 100;

// One tree, one basket of `per_basket` entries per branch and cluster, baskets of branch b in
// cluster c at seek 1000 + (c * branches + b) * 100 (ROOT's order: cluster by cluster).
// As ReadAhead sees it: the tree's layout (rootio/layout.h).
rootio::LayoutSet Tree(int branches, int clusters, int64_t per_basket = 1000) {
  rootio::TreeInfo t;
  t.name = "Events";
  t.entries = clusters * per_basket;
  for (int b = 0; b < branches; ++b) {
    rootio::Branch br;
    br.name = "b" + std::to_string(b);
    for (int c = 0; c < clusters; ++c) {
      br.baskets.push_back({c * per_basket, per_basket,
                            1000 + static_cast<uint64_t>(c * branches + b) * kBasket,
                            static_cast<uint32_t>(kBasket), -1});
    }
    t.branches.push_back(br);
  }
  return rootio::TreeLayout(t);
}

// A reader's read: the baskets of `branches` in cluster `c`.
std::vector<fetch::Range> Read(int branches_total, std::vector<int> branches, int c) {
  std::vector<fetch::Range> r;
  for (int b : branches) {
    r.push_back({1000 + static_cast<uint64_t>(c * branches_total + b) * kBasket, kBasket});
  }
  return r;
}

// Drives the predictor as FileAhead does: after a read in sequence, predictions are kept at
// `window` bytes outstanding; a seek stops them until the next read in sequence.
struct Replay {
  ReadAhead ra;
  uint64_t window;
  uint64_t outstanding = 0;  // predicted, neither used nor stale
  uint64_t read_bytes = 0;
  uint64_t used_bytes = 0;  // read bytes that had been predicted
  uint64_t stale_bytes = 0;
  uint64_t predicted_bytes = 0;
  size_t reads = 0;
  size_t in_sequence = 0;

  Replay(rootio::LayoutSet tree, uint64_t window_bytes)
      : ra({std::move(tree)}, 1), window(window_bytes) {}

  void Do(const std::vector<fetch::Range>& chunks) {
    std::vector<fetch::Range> used;
    std::vector<fetch::Range> stale;
    const ReadAhead::Observation obs = ra.Observe(chunks, used, stale);
    ++reads;
    read_bytes += fetch::TotalBytes(chunks);
    used_bytes += fetch::TotalBytes(used);
    stale_bytes += fetch::TotalBytes(stale);
    outstanding -= fetch::TotalBytes(used) + fetch::TotalBytes(stale);
    if (!obs.in_sequence) {
      return;
    }
    ++in_sequence;
    if (outstanding < window) {
      std::vector<fetch::Range> ahead;
      const uint64_t got = ra.Predict(window - outstanding, ahead);
      EXPECT_EQ(got, fetch::TotalBytes(ahead));
      outstanding += got;
      predicted_bytes += got;
    }
    EXPECT_EQ(ra.pending() * kBasket, outstanding);
  }
};

TEST(ReadAheadWindow, ClusterReadsArePredictedAfterTheFirst) {
  Replay r(Tree(6, 30), 8 * kBasket);
  for (int c = 0; c < 30; ++c) {
    r.Do(Read(6, {1, 3, 4}, c));
  }
  EXPECT_EQ(r.in_sequence, 30u);
  EXPECT_EQ(r.used_bytes, r.read_bytes - 3 * kBasket);  // all but the first read
  EXPECT_EQ(r.stale_bytes, 0u);
  EXPECT_EQ(r.outstanding, 0u);  // nothing past the last cluster
  EXPECT_EQ(r.predicted_bytes, r.used_bytes);
}

TEST(ReadAheadWindow, PredictionsComeInEntryOrderWithinTheWindow) {
  ReadAhead ra({Tree(4, 10)}, 1);
  std::vector<fetch::Range> used;
  std::vector<fetch::Range> stale;
  ra.Observe(Read(4, {0, 2}, 0), used, stale);
  std::vector<fetch::Range> ahead;
  EXPECT_EQ(ra.Predict(3 * kBasket, ahead), 3 * kBasket);
  EXPECT_EQ(ahead, (std::vector<fetch::Range>{Read(4, {0}, 1)[0], Read(4, {2}, 1)[0],
                                              Read(4, {0}, 2)[0]}));
  // A window smaller than a basket still moves by one basket.
  ahead.clear();
  EXPECT_EQ(ra.Predict(1, ahead), kBasket);
  EXPECT_EQ(ahead, Read(4, {2}, 2));
  EXPECT_EQ(ra.pending(), 4u);
}

TEST(ReadAheadWindow, BranchByBranchReadsLearnTheWholeSet) {
  // uproot asking for each branch's baskets on its own, cluster after cluster.
  Replay r(Tree(8, 25), 12 * kBasket);
  for (int c = 0; c < 25; ++c) {
    for (int b : {0, 2, 5, 7}) {
      r.Do(Read(8, {b}, c));
    }
  }
  EXPECT_EQ(r.in_sequence, r.reads);
  EXPECT_EQ(r.stale_bytes, 0u);
  // Only the first cluster's reads come before the branches are known.
  EXPECT_GE(r.used_bytes, r.read_bytes - 4 * kBasket);
  EXPECT_EQ(r.outstanding, 0u);
}

TEST(ReadAheadWindow, WholeBranchReadsPredictNothing) {
  // uproot reading each branch whole, one after the other: no cluster comes next.
  Replay r(Tree(6, 20), 10 * kBasket);
  for (int b = 0; b < 6; ++b) {
    std::vector<fetch::Range> all;
    for (int c = 0; c < 20; ++c) {
      all.push_back(Read(6, {b}, c)[0]);
    }
    r.Do(all);
  }
  EXPECT_EQ(r.predicted_bytes, 0u);
  EXPECT_EQ(r.stale_bytes, 0u);
}

TEST(ReadAheadWindow, ReadsSlightlyOutOfOrderStayInSequence) {
  // Two reader threads: cluster c + 1 sometimes arrives before cluster c.
  Replay r(Tree(5, 40), 10 * kBasket);
  for (int c = 0; c < 40; c += 2) {
    r.Do(Read(5, {0, 1, 2}, c + 1));
    r.Do(Read(5, {0, 1, 2}, c));
  }
  EXPECT_EQ(r.stale_bytes, 0u);
  EXPECT_GE(r.in_sequence, r.reads - 1);
  EXPECT_GE(r.used_bytes, r.read_bytes - 6 * kBasket);
}

TEST(ReadAheadWindow, RandomReadsWasteLittle) {
  Replay r(Tree(10, 400), 6 * kBasket);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> branch(0, 9);
  std::uniform_int_distribution<int> cluster(0, 399);
  for (int i = 0; i < 500; ++i) {
    r.Do(Read(10, {branch(rng)}, cluster(rng)));
  }
  // Few random reads look like a continuation; what those predicted is mostly not read.
  EXPECT_LT(r.in_sequence, r.reads / 10);
  EXPECT_LT(r.predicted_bytes, r.read_bytes / 2);
}

TEST(ReadAheadWindow, APatternChangeDropsTheOldBranches) {
  Replay r(Tree(6, 40), 8 * kBasket);
  for (int c = 0; c < 20; ++c) {
    r.Do(Read(6, {0, 1}, c));
  }
  const uint64_t stale_before = r.stale_bytes;
  EXPECT_EQ(stale_before, 0u);
  for (int c = 20; c < 40; ++c) {
    r.Do(Read(6, {3, 4}, c));
  }
  // The old branches' predictions go stale once (at most a window), and are not predicted
  // again. Unpredicted: the first read, and the first two of the new branches (the old
  // branches' predictions fill the window until the second read tells they are dropped).
  EXPECT_GT(r.stale_bytes, 0u);
  EXPECT_LE(r.stale_bytes, 8 * kBasket);
  EXPECT_EQ(r.used_bytes, r.read_bytes - 3 * 2 * kBasket);
  EXPECT_EQ(r.outstanding, 0u);
  EXPECT_EQ(r.ra.pending(), 0u);
}

TEST(ReadAheadWindow, ASkippedRangeGoesStale) {
  Replay r(Tree(3, 60), 9 * kBasket);
  for (int c = 0; c < 10; ++c) {
    r.Do(Read(3, {0, 1, 2}, c));
  }
  // The reader jumps forward: the predictions it left behind become stale, once.
  r.Do(Read(3, {0, 1, 2}, 40));
  EXPECT_EQ(r.stale_bytes, 9 * kBasket);
  EXPECT_EQ(r.ra.pending(), r.outstanding / kBasket);
}

}  // namespace
}  // namespace ferry::readahead
