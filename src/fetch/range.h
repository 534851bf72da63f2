// Byte ranges and the set operations the read planner needs.
//
// A Range is the half-open interval [offset, offset + length). "Normalised" ranges are sorted by
// offset, non-empty, and neither overlap nor touch (adjacent ranges are merged).
// All functions are pure; those taking an output vector clear it first and reuse its capacity,
// so a caller that keeps the vector across calls allocates nothing in steady state.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ferry::fetch {

struct Range {
  uint64_t offset = 0;
  uint64_t length = 0;

  uint64_t end() const { return offset + length; }
  bool empty() const { return length == 0; }
  friend bool operator==(const Range&, const Range&) = default;
};

// Sorts, drops empty ranges and merges overlapping or adjacent ones, in place.
void Normalize(std::vector<Range>& ranges);

// True when `ranges` is normalised (see above).
bool IsNormalized(std::span<const Range> ranges);

// out = a \ b; overlap (optional) = a ∩ b. Both inputs must be normalised; outputs are.
void Subtract(std::span<const Range> a,
              std::span<const Range> b,
              std::vector<Range>& out,
              std::vector<Range>* overlap = nullptr);

// Total bytes of the ranges.
uint64_t TotalBytes(std::span<const Range> ranges);

}  // namespace ferry::fetch
