// Reading counter columns (nJet, nMuon, ...) fast: the type switch is taken once per array, not
// once per value as rootio::Column::AsUint64 does, since scans, E-block decoding and the
// converter walk every event's counters. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "rootio/leaf_type.h"

namespace ferry::store {

namespace counts_detail {
template <class T, class F>
void Each(const uint8_t* p, size_t n, F&& f) {
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    f(i, static_cast<uint64_t>(v));
  }
}
}  // namespace counts_detail

// Calls f(i, value) for the n native-endian integer values of type t at p (negative signed
// values convert to uint64 as AsUint64 does). Non-integer types call nothing.
template <class F>
void ForEachCount(const uint8_t* p, rootio::LeafType t, size_t n, F&& f) {
  using rootio::LeafType;
  switch (t) {
    case LeafType::kBool:
    case LeafType::kUInt8:
      counts_detail::Each<uint8_t>(p, n, f);
      break;
    case LeafType::kInt8:
      counts_detail::Each<int8_t>(p, n, f);
      break;
    case LeafType::kInt16:
      counts_detail::Each<int16_t>(p, n, f);
      break;
    case LeafType::kUInt16:
      counts_detail::Each<uint16_t>(p, n, f);
      break;
    case LeafType::kInt32:
      counts_detail::Each<int32_t>(p, n, f);
      break;
    case LeafType::kUInt32:
      counts_detail::Each<uint32_t>(p, n, f);
      break;
    case LeafType::kInt64:
      counts_detail::Each<int64_t>(p, n, f);
      break;
    case LeafType::kUInt64:
      counts_detail::Each<uint64_t>(p, n, f);
      break;
    default:
      break;
  }
}

// Sum of n counter values of type t at p.
inline uint64_t SumCounts(const uint8_t* p, rootio::LeafType t, size_t n) {
  uint64_t s = 0;
  ForEachCount(p, t, n, [&](size_t, uint64_t v) { s += v; });
  return s;
}

}  // namespace ferry::store
