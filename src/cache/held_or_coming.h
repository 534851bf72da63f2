// HeldOrComing: what a cache entry holds plus what is being fetched into it (private to the
// read path: cached_file.cc, cached_ahead.cc).
// Thread-safety: borrows the index (its entry's mutex held shared by the caller) and the
// in-flight ranges (sorted, disjoint); use within that scope only.
#pragma once

#include <algorithm>
#include <span>

#include "cache/page_index.h"
#include "fetch/planner.h"
#include "fetch/range.h"

namespace ferry::cache {

// What the cache holds plus what other threads are fetching into it: planning against both
// makes a new piece of a partly held page touch the piece already on its way, so the page keeps
// one interval (docs/format/page-store.md) instead of two that the store could not both keep.
class HeldOrComing final : public fetch::CoverageMap {
 public:
  HeldOrComing(const PageIndex& index, std::span<const fetch::Range> inflight)
      : index_(index), inflight_(inflight) {}

  fetch::PageCover Cover(uint64_t page) const override {
    fetch::PageCover best = index_.Cover(page);
    if (inflight_.empty() || index_.full(page)) {
      return best;
    }
    const uint64_t start = page * index_.page_size();
    const uint64_t end = start + index_.PageLength(page);
    auto it = std::upper_bound(inflight_.begin(), inflight_.end(), start,
                               [](uint64_t off, const fetch::Range& r) { return off < r.offset; });
    if (it != inflight_.begin()) {
      --it;
    }
    for (; it != inflight_.end() && it->offset < end; ++it) {
      if (it->end() <= start) {
        continue;
      }
      const auto lo = static_cast<uint32_t>(std::max(it->offset, start) - start);
      const auto hi = static_cast<uint32_t>(std::min(it->end(), end) - start);
      if (!best.empty() && hi >= best.lo && lo <= best.hi) {
        best = {std::min(best.lo, lo), std::max(best.hi, hi)};  // touching: one run
      } else if (best.empty() || hi - lo > best.hi - best.lo) {
        best = {lo, hi};
      }
    }
    return best;
  }

 private:
  const PageIndex& index_;
  std::span<const fetch::Range> inflight_;
};

}  // namespace ferry::cache
