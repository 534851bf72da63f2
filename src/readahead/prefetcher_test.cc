// Prefetcher: fetches at once, with and without an application read waiting on a miss.
#include "readahead/prefetcher.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "base/mutex.h"

namespace ferry::readahead {
namespace {

// Submits `tasks` kNow fetches that hold until released and returns how many ran at once.
size_t PeakFetches(Prefetcher& p, int tasks) {
  Mutex mu;
  CondVar cv;
  bool open = false;
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  std::atomic<int> done{0};
  for (int i = 0; i < tasks; ++i) {
    p.Submit(Prefetcher::Kind::kNow, 1, [&] {
      const int now = ++running;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      {
        MutexLock lock(mu);
        while (!open) {
          cv.Wait(mu);
        }
      }
      --running;
      ++done;
    });
  }
  // Long enough for every thread allowed to take a task to take one.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {
    MutexLock lock(mu);
    open = true;
  }
  cv.NotifyAll();
  while (done.load() < tasks) {
    std::this_thread::yield();
  }
  return static_cast<size_t>(peak.load());
}

TEST(Prefetcher, FewerFetchesWhileTheApplicationWaits) {
  Prefetcher p(1 << 30);
  p.AppFetchBegin();
  EXPECT_EQ(PeakFetches(p, 12), Prefetcher::kMaxFetchesWhileAppWaits);
  p.AppFetchEnd();
  EXPECT_EQ(PeakFetches(p, 12), Prefetcher::kMaxFetches);
}

TEST(Prefetcher, AHostOfManyReadersHoldsNothingBackWhileOneWaits) {
  // The site proxy: ferry.ahead_fetches for both.
  Prefetcher p(1 << 30, 5, 5);
  p.AppFetchBegin();
  EXPECT_EQ(PeakFetches(p, 12), 5u);
  p.AppFetchEnd();
}

}  // namespace
}  // namespace ferry::readahead
