// Prefetcher: fetches at once, with and without an application read waiting on a miss.
#include "readahead/prefetcher.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

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

TEST(Prefetcher, ReadOrderPlacesDirectoriesAsFirstSeenThenNames) {
  Prefetcher p(1 << 30);
  const std::string z1 = p.ReadOrder("root://h//zlib1/f_1.root");
  const std::string l0 = p.ReadOrder("root://h//lzma9/f_0.root");
  const std::string z0 = p.ReadOrder("root://h//zlib1/f_0.root");
  EXPECT_LT(z0, z1);
  EXPECT_LT(z1, l0);  // zlib1/ was seen first: the reader reads it first
  EXPECT_EQ(p.ReadOrder("root://h//zlib1/f_1.root"), z1);
}

TEST(Prefetcher, ReadOrderRemembersBoundedlyManyDirectories) {
  Prefetcher p(1 << 30);
  const std::string first = p.ReadOrder("d0/a.root");
  for (size_t i = 1; i <= Prefetcher::kMaxOrderDirs; ++i) {
    (void)p.ReadOrder("d" + std::to_string(i) + "/a.root");
  }
  EXPECT_LT(first, p.ReadOrder("d0/a.root"));  // forgotten, and seen again: a later place
}

TEST(Prefetcher, SeedsGoOutInTheFilesReadOrderNotAsSubmitted) {
  // One fetch at a time: a kNow task holds the only slot while the seeds queue.
  Prefetcher p(1 << 30, 1, 1);
  const std::string first = p.ReadOrder("d/a.root");
  const std::string second = p.ReadOrder("d/b.root");
  const std::string third = p.ReadOrder("e/a.root");
  Mutex mu;
  CondVar cv;
  bool open = false;
  bool holding = false;
  std::vector<std::string> ran;
  p.Submit(Prefetcher::Kind::kNow, 1, [&] {
    MutexLock lock(mu);
    holding = true;
    cv.NotifyAll();
    while (!open) {
      cv.Wait(mu);
    }
  });
  for (const auto& [order, name] : std::vector<std::pair<std::string, std::string>>{
           {third, "e/a 1"}, {second, "d/b 1"}, {first, "d/a 1"}, {second, "d/b 2"}}) {
    p.Submit(
        Prefetcher::Kind::kLater, 1,
        [&, name = name] {
          MutexLock lock(mu);
          ran.push_back(name);
          cv.NotifyAll();
        },
        order);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  MutexLock lock(mu);
  while (!holding && cv.WaitUntil(mu, deadline)) {
  }
  open = true;
  cv.NotifyAll();
  while (ran.size() < 4 && cv.WaitUntil(mu, deadline)) {
  }
  EXPECT_EQ(ran, (std::vector<std::string>{"d/a 1", "d/b 1", "d/b 2", "e/a 1"}));
}

}  // namespace
}  // namespace ferry::readahead
