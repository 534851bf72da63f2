// Concurrency: many threads leasing channels; run under ThreadSanitizer in `make test`.
#include "fetch/channel_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ferry::fetch {
namespace {

TEST(ChannelPoolConcurrencyTest, ConcurrentLeasesSpreadOverChannels) {
  constexpr size_t kChannels = 4;
  constexpr int kThreads = 8;
  constexpr int kLeasesPerThread = 200;
  ChannelPool pool(kChannels);
  std::atomic<int> max_on_one{0};
  std::vector<std::atomic<int>> live(kChannels);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kLeasesPerThread; ++i) {
        ChannelLease lease(pool);
        int now = live[lease.channel()].fetch_add(1) + 1;
        int prev = max_on_one.load();
        while (now > prev && !max_on_one.compare_exchange_weak(prev, now)) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        live[lease.channel()].fetch_sub(1);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  uint64_t total = 0;
  for (size_t c = 0; c < kChannels; ++c) {
    EXPECT_EQ(pool.in_flight(c), 0u);
    EXPECT_GT(pool.acquired(c), 0u) << "channel " << c << " never used";
    total += pool.acquired(c);
  }
  EXPECT_EQ(total, static_cast<uint64_t>(kThreads * kLeasesPerThread));
  // 8 threads over 4 channels, least-loaded first: never more than 2 on one channel.
  EXPECT_LE(max_on_one.load(), 2);
}

}  // namespace
}  // namespace ferry::fetch
