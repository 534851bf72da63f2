// The proxy's shared state under concurrent clients (run under TSan by `make test`): the origin
// meter, pgread completions put back in order. (Read-ahead's, which the proxy shares with the
// client plug-in, is tested under threads in src/readahead/read_ahead_concurrency_test.cc.)
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "plugin/proxy/completion_order.h"
#include "plugin/proxy/origin_meter.h"

namespace ferry::proxy {
namespace {

TEST(ProxyConcurrency, MeterBalancesUnderConcurrentUse) {
  OriginMeter meter;
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        meter.Begin(2);
        (void)meter.Snapshot();
        meter.End(2);
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  const MeterSnapshot s = meter.Snapshot();
  EXPECT_EQ(s.requests, 16000u);
  EXPECT_EQ(s.inflight, 0u);
  EXPECT_LE(s.max_inflight, 16u);
}

TEST(ProxyConcurrency, CompletionsFinishedByManyThreadsRunInTicketOrder) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  CompletionOrder order;
  std::vector<uint64_t> tickets(kThreads * kPerThread);
  for (uint64_t& t : tickets) {
    t = order.Take();
  }
  std::vector<uint64_t> ran;  // only written by the thread running due tasks, one at a time
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    // Thread i finishes tickets i, i + kThreads, ...: every thread's next ticket depends on
    // the others', so completions keep arriving out of order.
    threads.emplace_back([&, i] {
      for (size_t k = static_cast<size_t>(i); k < tickets.size(); k += kThreads) {
        const uint64_t t = tickets[k];
        order.Finish(t, [&ran, t] { ran.push_back(t); });
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  ASSERT_EQ(ran.size(), tickets.size());
  for (size_t k = 0; k < ran.size(); ++k) {
    ASSERT_EQ(ran[k], k);
  }
  EXPECT_EQ(order.waiting(), 0U);
}

}  // namespace
}  // namespace ferry::proxy
