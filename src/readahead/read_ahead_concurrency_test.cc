// Read-ahead's shared state under concurrent readers (run under TSan by `make test`), as the
// site proxy's many clients and the client plug-in's threads use it: one ReadAhead read and
// seeded from many threads, the branch memory learning while files wait on it.
#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "readahead/read_ahead.h"
#include "rootio/layout.h"

namespace ferry::readahead {
namespace {

// As ReadAhead sees it: the tree's layout (rootio/layout.h).
rootio::LayoutSet Tree(int branches, int clusters) {
  rootio::TreeInfo t;
  t.name = "Events";
  for (int b = 0; b < branches; ++b) {
    rootio::Branch br;
    br.name = "b" + std::to_string(b);
    for (int c = 0; c < clusters; ++c) {
      br.baskets.push_back(
          {int64_t{c} * 100, 100, 1000 + static_cast<uint64_t>(c * branches + b) * 100, 100, -1});
    }
    t.branches.push_back(br);
  }
  return rootio::TreeLayout(t);
}

TEST(ReadAheadConcurrency, ReadAheadPredictsEachBasketOnceWhateverTheInterleaving) {
  constexpr int kBranches = 6;
  constexpr int kClusters = 400;
  ReadAhead ra({Tree(kBranches, kClusters)}, 4);
  std::vector<std::vector<fetch::Range>> got(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int c = static_cast<int>(t); c < kClusters; c += 8) {
        std::vector<fetch::Range> chunks;
        for (int b = 0; b < kBranches; b += 2) {
          chunks.push_back({1000 + static_cast<uint64_t>(c * kBranches + b) * 100, 100});
        }
        std::map<std::string, std::vector<std::string>> learned;
        ra.OnRead(chunks, got[t], &learned);
        ra.Seed("Events", {"b1"}, got[t]);  // ignored: clients read already
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  std::vector<fetch::Range> all;
  for (const auto& g : got) {
    all.insert(all.end(), g.begin(), g.end());
  }
  std::sort(all.begin(), all.end(),
            [](const fetch::Range& a, const fetch::Range& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_NE(all[i].offset, all[i - 1].offset) << "predicted twice";
  }
  EXPECT_LE(all.size(), static_cast<size_t>(kClusters * kBranches / 2));
}

TEST(ReadAheadConcurrency, BranchMemoryWakesEveryWaiterOnce) {
  BranchMemory memory;
  std::atomic<int> woken{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string tree = "T" + std::to_string(i % 5);
        if (t % 2 == 0) {
          memory.Learn(tree, {"a", "b"});
        } else {
          auto known = memory.RecallOrWait(tree, [&](const std::vector<std::string>& b) {
            woken += b.size() == 2 ? 1 : 0;
            return true;
          });
          woken += known.empty() ? 0 : 1;
        }
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  // Every call of the readers was answered: by a recall, or later by a wake-up (the last waiters
  // wake with one more lesson).
  for (int i = 0; i < 5; ++i) {
    memory.Learn("T" + std::to_string(i), {"a", "b"});
  }
  EXPECT_EQ(woken.load(), 4 * 200);
}

}  // namespace
}  // namespace ferry::readahead
