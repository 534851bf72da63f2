#include "plugin/proxy/copy_budget.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ferry::proxy {
namespace {

TEST(CopyBudgetTest, ChargesWithinTheLimitOnly) {
  CopyBudget b(10);
  EXPECT_TRUE(b.TryTake(4));
  EXPECT_TRUE(b.TryTake(6));
  EXPECT_FALSE(b.TryTake(1)) << "full";
  EXPECT_EQ(b.held(), 10u);
  b.Release(6);
  EXPECT_FALSE(b.TryTake(7)) << "would pass the limit: nothing charged";
  EXPECT_EQ(b.held(), 4u);
  EXPECT_TRUE(b.TryTake(6));
  b.Release(10);
  EXPECT_EQ(b.held(), 0u);
  EXPECT_EQ(b.peak(), 10u);
  EXPECT_EQ(b.refused(), 2u);
  EXPECT_FALSE(b.TryTake(11)) << "larger than the limit";
  CopyBudget none(0);
  EXPECT_FALSE(none.TryTake(1));
  EXPECT_TRUE(none.TryTake(0));
}

TEST(CopyBudgetTest, TheShareIsTheLimitOverTheStreams) {
  CopyBudget b(90);
  EXPECT_EQ(b.share(), 90u);
  b.Join();
  b.Join();
  b.Join();
  EXPECT_EQ(b.share(), 30u);
  b.Leave();
  EXPECT_EQ(b.share(), 45u);
}

TEST(CopyBudgetTest, ConcurrentChargesNeverPassTheLimit) {
  constexpr uint64_t kLimit = 1000;
  CopyBudget b(kLimit);
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&b, t] {
      for (int i = 0; i < 20000; ++i) {
        const auto n = static_cast<uint64_t>(1 + (i + t) % 97);
        if (b.TryTake(n)) {
          b.Release(n);
        }
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  EXPECT_EQ(b.held(), 0u);
  EXPECT_LE(b.peak(), kLimit);
  EXPECT_GT(b.peak(), 0u);
}

}  // namespace
}  // namespace ferry::proxy
