// Per-stage timing and queue depths of the transfer pipeline, reported by both ends in --json
// (docs/format/transfer.md, "Stage timing"), so that a run says where each end waited.
//
// StageTimer accumulates one stage: how many times it ran, the total time and the longest one.
// Occupancy samples a queue depth: mean and maximum. Both are lock-free (relaxed atomics) and
// safe to update from any thread; they cost two clock reads and a few atomic adds per block,
// nothing per byte. A stage's total is summed over the threads that run it: divide by the
// session's seconds times the thread count for the share of their time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry {
class JsonWriter;
}  // namespace ferry

namespace ferry::xfer {

inline int64_t StageNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct StageTime {
  std::string name;
  int threads = 1;  // threads that ran the stage (its seconds are their sum)
  uint64_t count = 0;
  double seconds = 0;
  double max_ms = 0;
};

struct QueueDepth {
  std::string name;
  double mean = 0;
  uint64_t max = 0;
  uint64_t capacity = 0;  // 0 when unbounded
};

class StageTimer {
 public:
  void Add(int64_t ns) {
    auto v = static_cast<uint64_t>(ns > 0 ? ns : 0);
    count_.fetch_add(1, std::memory_order_relaxed);
    total_ns_.fetch_add(v, std::memory_order_relaxed);
    uint64_t m = max_ns_.load(std::memory_order_relaxed);
    while (v > m && !max_ns_.compare_exchange_weak(m, v, std::memory_order_relaxed)) {
    }
  }
  // Adds the time since start_ns and returns now (the next stage's start).
  int64_t Since(int64_t start_ns) {
    int64_t now = StageNowNs();
    Add(now - start_ns);
    return now;
  }
  StageTime Snapshot(std::string name, int threads = 1) const;

 private:
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> total_ns_{0};
  std::atomic<uint64_t> max_ns_{0};
};

class Occupancy {
 public:
  void Add(uint64_t depth) {
    samples_.fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(depth, std::memory_order_relaxed);
    uint64_t m = max_.load(std::memory_order_relaxed);
    while (depth > m && !max_.compare_exchange_weak(m, depth, std::memory_order_relaxed)) {
    }
  }
  QueueDepth Snapshot(std::string name, uint64_t capacity) const;

 private:
  std::atomic<uint64_t> samples_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> max_{0};
};

// Writes "stages": {name: {"threads","count","seconds","max_ms"}, ...} and
// "queues": {name: {"mean","max","capacity"}, ...} into the object being written.
void WriteStagesJson(JsonWriter& w,
                     const std::vector<StageTime>& stages,
                     const std::vector<QueueDepth>& queues);

}  // namespace ferry::xfer
