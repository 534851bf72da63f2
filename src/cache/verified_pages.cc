#include "cache/verified_pages.h"

#include <algorithm>

namespace ferry::cache {

VerifiedPages::VerifiedPages(uint64_t epoch, uint64_t page_count)
    : epoch_(epoch),
      page_count_(page_count),
      words_(std::make_unique<std::atomic<uint64_t>[]>((page_count + 63) / 64)) {}

void VerifiedPages::Mark(uint64_t page) {
  if (page < page_count_) {
    words_[page >> 6].fetch_or(uint64_t{1} << (page & 63), std::memory_order_release);
  }
}

void VerifiedPages::Clear(uint64_t page) {
  if (page < page_count_) {
    words_[page >> 6].fetch_and(~(uint64_t{1} << (page & 63)), std::memory_order_release);
  }
}

void VerifiedPages::ClearAll() {
  for (uint64_t w = 0; w < (page_count_ + 63) / 64; ++w) {
    words_[w].store(0, std::memory_order_release);
  }
}

bool VerifiedPages::marked(uint64_t page) const {
  return page < page_count_
         && ((words_[page >> 6].load(std::memory_order_acquire) >> (page & 63)) & 1) != 0;
}

bool VerifiedPages::AllMarked(uint64_t first, uint64_t last) const {
  if (last >= page_count_ || first > last) {
    return false;
  }
  for (uint64_t p = first; p <= last;) {
    const uint64_t w = p >> 6;
    const uint64_t bits = words_[w].load(std::memory_order_acquire);
    const uint64_t lo = p & 63;
    const uint64_t hi = std::min<uint64_t>(63, lo + (last - p));
    const uint64_t mask =
        (hi == 63 ? ~uint64_t{0} : ((uint64_t{1} << (hi + 1)) - 1)) & ~((uint64_t{1} << lo) - 1);
    if ((bits & mask) != mask) {
      return false;
    }
    p += hi - lo + 1;
  }
  return true;
}

}  // namespace ferry::cache
