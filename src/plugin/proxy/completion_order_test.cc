#include "plugin/proxy/completion_order.h"

#include <vector>

#include <gtest/gtest.h>

namespace ferry::proxy {
namespace {

TEST(CompletionOrder, RunsTasksInTicketOrderWhateverOrderTheyFinish) {
  CompletionOrder order;
  std::vector<uint64_t> ran;
  const uint64_t a = order.Take();
  const uint64_t b = order.Take();
  const uint64_t c = order.Take();
  EXPECT_EQ(a, 0U);
  EXPECT_EQ(c, 2U);
  order.Finish(c, [&] { ran.push_back(c); });
  order.Finish(b, [&] { ran.push_back(b); });
  EXPECT_TRUE(ran.empty());  // both wait for the first
  EXPECT_EQ(order.waiting(), 2U);
  order.Finish(a, [&] { ran.push_back(a); });
  EXPECT_EQ(ran, (std::vector<uint64_t>{a, b, c}));
  EXPECT_EQ(order.waiting(), 0U);
}

TEST(CompletionOrder, ATaskFinishedInOrderRunsAtOnce) {
  CompletionOrder order;
  int runs = 0;
  for (int i = 0; i < 5; ++i) {
    order.Finish(order.Take(), [&] { ++runs; });
    EXPECT_EQ(runs, i + 1);
  }
}

}  // namespace
}  // namespace ferry::proxy
