// FetchCounters: what a process sent to its origins, for tests and `ferry cache stats`.
// Thread-safe (relaxed atomics); Snapshot() is a consistent-enough copy for reporting.
#pragma once

#include <atomic>
#include <cstdint>

#include "fetch/planner.h"

namespace ferry::fetch {

struct FetchTotals {
  uint64_t requests = 0;  // vector reads sent
  uint64_t chunks = 0;    // chunks in those reads
  uint64_t bytes = 0;     // bytes asked for
};

class FetchCounters {
 public:
  void Record(const FetchPlan& plan) {
    requests_.fetch_add(plan.reads.size(), std::memory_order_relaxed);
    chunks_.fetch_add(plan.chunks.size(), std::memory_order_relaxed);
    bytes_.fetch_add(plan.bytes, std::memory_order_relaxed);
  }
  void RecordRead(uint64_t chunks, uint64_t bytes) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    chunks_.fetch_add(chunks, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  FetchTotals Snapshot() const {
    return {requests_.load(std::memory_order_relaxed), chunks_.load(std::memory_order_relaxed),
            bytes_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> chunks_{0};
  std::atomic<uint64_t> bytes_{0};
};

}  // namespace ferry::fetch
