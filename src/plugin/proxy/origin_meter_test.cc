#include "plugin/proxy/origin_meter.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cache/testing/memory_origin.h"

namespace ferry::proxy {
namespace {

TEST(OriginMeter, IntegratesRequestsInFlight) {
  int64_t now = 1'000'000'000;  // the meter starts integrating at its first nonzero time
  OriginMeter m([&now] { return now; });
  m.Begin(2);
  now += 50'000'000;
  m.End(1);
  now += 50'000'000;
  m.End(1);
  now += 30'000'000;  // idle time counts for neither integral
  const MeterSnapshot s = m.Snapshot();
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.inflight, 0u);
  EXPECT_EQ(s.max_inflight, 2u);
  // 2 requests for 50 ms, then 1 for 50 ms: 0.15 request-seconds over 0.1 s busy.
  EXPECT_NEAR(s.inflight_seconds, 0.15, 1e-9);
  EXPECT_NEAR(s.busy_seconds, 0.10, 1e-9);
}

TEST(OriginMeter, MeteredOriginCountsEveryRead) {
  OriginMeter m;
  auto inner = std::make_shared<cache::MemoryOrigin>(std::vector<uint8_t>(1000, 7));
  MeteredOrigin origin(inner, m);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<uint8_t> buf(10);
      io::ReadRequest r{5, buf, {}};
      std::vector<cache::OriginRead> reads(3, cache::OriginRead{0, {&r, 1}});
      origin.Read(reads);
      ok += r.status && buf[0] == 7 ? 1 : 0;
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(m.Snapshot().requests, 12u);
  EXPECT_EQ(m.Snapshot().inflight, 0u);
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(inner->read_calls(), 12u);
}

}  // namespace
}  // namespace ferry::proxy
