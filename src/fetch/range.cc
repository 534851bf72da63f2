#include "fetch/range.h"

#include <algorithm>

namespace ferry::fetch {

void Normalize(std::vector<Range>& ranges) {
  std::erase_if(ranges, [](const Range& r) { return r.empty(); });
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& x, const Range& y) { return x.offset < y.offset; });
  size_t w = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (w > 0 && ranges[i].offset <= ranges[w - 1].end()) {
      uint64_t end = std::max(ranges[w - 1].end(), ranges[i].end());
      ranges[w - 1].length = end - ranges[w - 1].offset;
    } else {
      ranges[w++] = ranges[i];
    }
  }
  ranges.resize(w);
}

bool IsNormalized(std::span<const Range> ranges) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].empty() || (i > 0 && ranges[i].offset <= ranges[i - 1].end())) {
      return false;
    }
  }
  return true;
}

void Subtract(std::span<const Range> a,
              std::span<const Range> b,
              std::vector<Range>& out,
              std::vector<Range>* overlap) {
  out.clear();
  if (overlap != nullptr) {
    overlap->clear();
  }
  size_t j = 0;
  for (const Range& r : a) {
    uint64_t pos = r.offset;
    const uint64_t end = r.end();
    // Skip the b ranges that end before this one starts.
    while (j < b.size() && b[j].end() <= pos) {
      ++j;
    }
    size_t k = j;
    while (pos < end) {
      if (k >= b.size() || b[k].offset >= end) {
        out.push_back({pos, end - pos});
        break;
      }
      const Range& cut = b[k];
      if (cut.offset > pos) {
        out.push_back({pos, cut.offset - pos});
        pos = cut.offset;
      }
      uint64_t cut_end = std::min(cut.end(), end);
      if (overlap != nullptr && cut_end > pos) {
        overlap->push_back({pos, cut_end - pos});
      }
      pos = cut_end;
      if (cut.end() <= end) {
        ++k;
      }
    }
  }
}

uint64_t TotalBytes(std::span<const Range> ranges) {
  uint64_t n = 0;
  for (const Range& r : ranges) {
    n += r.length;
  }
  return n;
}

}  // namespace ferry::fetch
