#include "plugin/proxy/origin_meter.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cache/memory_origin.h"

namespace ferry::proxy {
namespace {

TEST(OriginMeter, IntegratesRequestsInFlight) {
  OriginMeter m;
  m.Begin(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  m.End(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  m.End(1);
  const MeterSnapshot s = m.Snapshot();
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.inflight, 0u);
  EXPECT_EQ(s.max_inflight, 2u);
  // 2 requests for ~50 ms, then 1 for ~50 ms: ~0.15 request-seconds over ~0.1 s busy.
  EXPECT_GT(s.inflight_seconds, 0.14);
  EXPECT_LT(s.inflight_seconds, 0.5);
  EXPECT_GT(s.busy_seconds, 0.09);
  EXPECT_LT(s.busy_seconds, s.inflight_seconds);
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
