// The proxy's shared state under concurrent clients (run under TSan by `make test`): the origin
// meter. (Read-ahead's, which the proxy shares with the client plug-in, is tested under threads
// in src/readahead/read_ahead_concurrency_test.cc.)
#include <thread>
#include <vector>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ferry::proxy
