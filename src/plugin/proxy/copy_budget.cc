#include "plugin/proxy/copy_budget.h"

#include <algorithm>

namespace ferry::proxy {

bool CopyBudget::TryTake(uint64_t bytes) {
  uint64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || held > limit_ - bytes) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  const uint64_t now = held + bytes;
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return true;
}

void CopyBudget::Release(uint64_t bytes) {
  held_.fetch_sub(bytes, std::memory_order_relaxed);
}

uint64_t CopyBudget::share() const {
  return limit_ / std::max<uint64_t>(1, streams_.load(std::memory_order_relaxed));
}

}  // namespace ferry::proxy
