// Offsets shared across threads: a decoder fills a collection's offsets, shares them with a
// column it hands to another thread, and refills them at once for the next cluster. Nothing
// but Offsets' own count of holders orders the reader's reads before the decoder's refill in
// place, so a wrong memory order there is a data race ThreadSanitizer reports (this test runs
// under the TSan preset), and a refill of a vector still being read shows as mixed values.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <thread>

#include <gtest/gtest.h>

#include "base/mutex.h"
#include "rootio/column.h"

namespace ferry::rootio {
namespace {

constexpr uint64_t kRounds = 2000;
constexpr size_t kValues = 4096;

// Columns from the decoder to the reader; an empty column ends the stream.
class Handoff {
 public:
  void Push(Column c) {
    MutexLock lock(mu_);
    queue_.push_back(std::move(c));
    cv_.NotifyOne();
  }
  Column Pop() {
    MutexLock lock(mu_);
    while (queue_.empty()) {
      cv_.Wait(mu_);
    }
    Column c = std::move(queue_.front());
    queue_.pop_front();
    return c;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<Column> queue_ FERRY_GUARDED_BY(mu_);
};

TEST(OffsetsConcurrency, ARefillInPlaceWaitsForEveryReaderToDropItsCopy) {
  Handoff handoff;
  uint64_t mixed = 0;
  uint64_t seen = 0;
  std::thread reader([&] {
    for (;;) {
      Column c = handoff.Pop();
      if (c.offsets.empty()) {
        return;
      }
      // Every value of a round is the round's number: a refill while this runs mixes them.
      const uint64_t round = c.offsets[0];
      for (uint64_t v : c.offsets) {
        mixed += v != round ? 1u : 0u;
      }
      ++seen;
    }
  });
  Offsets held;
  uint64_t in_place = 0;
  for (uint64_t round = 1; round <= kRounds; ++round) {
    if (round % 2 == 0) {
      // Every other round waits until the reader dropped its copy (seen through the count
      // alone, bounded at 10 s), so the refill below happens in place, right after its reads.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (held.Shared() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
    }
    const uint64_t* before = held.data();
    std::vector<uint64_t>& v = held.Overwrite();
    v.assign(kValues, round);
    in_place += held.data() == before ? 1u : 0u;
    Column c;
    c.offsets.Share(held);
    handoff.Push(std::move(c));
  }
  handoff.Push(Column{});
  reader.join();
  EXPECT_EQ(seen, kRounds);
  EXPECT_EQ(mixed, 0u);
  EXPECT_GE(in_place, kRounds / 2 - 1) << "the rounds that waited for the reader refill in place";
  std::printf("refilled in place %llu of %llu times\n", static_cast<unsigned long long>(in_place),
              static_cast<unsigned long long>(kRounds));
}

}  // namespace
}  // namespace ferry::rootio
