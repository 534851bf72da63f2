// Prefetcher: fetches at once, with and without an application read waiting on a miss.
#include "readahead/prefetcher.h"

#include <algorithm>
#include <chrono>

#include <gtest/gtest.h>

#include "base/mutex.h"

namespace ferry::readahead {
namespace {

struct Peak {
  size_t running = 0;  // the most fetches that ran at once (0: `expected` never ran within 10 s)
  size_t queued = 0;   // tasks not started when `expected` ran
};

// Submits `tasks` kNow fetches that hold until released, waits until `expected` of them run at
// once, notes what is still queued, releases them, and returns the peak.
Peak PeakFetches(Prefetcher& p, size_t tasks, size_t expected) {
  Mutex mu;
  CondVar cv;
  bool open = false;
  size_t running = 0;
  size_t peak = 0;
  size_t done = 0;
  for (size_t i = 0; i < tasks; ++i) {
    p.Submit(Prefetcher::Kind::kNow, 1, [&] {
      MutexLock lock(mu);
      peak = std::max(peak, ++running);
      cv.NotifyAll();
      while (!open) {
        cv.Wait(mu);
      }
      --running;
      ++done;
      cv.NotifyAll();
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  MutexLock lock(mu);
  while (running < expected && cv.WaitUntil(mu, deadline)) {
  }
  Peak result;
  result.queued = p.queued();  // a fetch past the limit would have left the queue
  result.running = running >= expected ? peak : 0;
  open = true;
  cv.NotifyAll();
  // Every task runs to its end before `mu` and the counters go (bounded: each is released).
  while (done < tasks) {
    cv.Wait(mu);
  }
  return result;
}

TEST(Prefetcher, FewerFetchesWhileTheApplicationWaits) {
  Prefetcher p(1 << 30);
  p.AppFetchBegin();
  Peak waiting = PeakFetches(p, 12, Prefetcher::kMaxFetchesWhileAppWaits);
  EXPECT_EQ(waiting.running, Prefetcher::kMaxFetchesWhileAppWaits);
  EXPECT_EQ(waiting.queued, 12 - Prefetcher::kMaxFetchesWhileAppWaits);
  p.AppFetchEnd();
  Peak free = PeakFetches(p, 12, Prefetcher::kMaxFetches);
  EXPECT_EQ(free.running, Prefetcher::kMaxFetches);
  EXPECT_EQ(free.queued, 12 - Prefetcher::kMaxFetches);
}

TEST(Prefetcher, AHostOfManyReadersHoldsNothingBackWhileOneWaits) {
  // The site proxy: ferry.ahead_fetches for both.
  Prefetcher p(1 << 30, 5, 5);
  p.AppFetchBegin();
  Peak waiting = PeakFetches(p, 12, 5);
  EXPECT_EQ(waiting.running, 5u);
  EXPECT_EQ(waiting.queued, 7u);
  p.AppFetchEnd();
}

}  // namespace
}  // namespace ferry::readahead
