// Byte shuffle of typed values (docs/format/store.md section 5): the bytes of n values of width
// w are stored as w planes of n bytes (plane b holds byte b of every value). Floats whose low
// mantissa bits are zero, and integers of small magnitude, then give long runs of equal bytes
// that the codec compresses far better than the interleaved values. Width 1 is a copy.
// The transposes are base/byte_plane.h's (SSE2 and AVX2, chosen at run time). Pure functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/byte_plane.h"

namespace ferry::store {

// dst[b * n + i] = src[i * w + b]; dst and src do not overlap.
inline void ShuffleBytes(const uint8_t* src, size_t n, size_t w, uint8_t* dst) {
  SplitBytes(src, n, w, dst);
}

// Values of width w whose byte b is at planes + b * stride + i (i < count), interleaved into dst
// (count * w bytes).
inline void UnshufflePlanes(
    const uint8_t* planes, size_t stride, size_t count, size_t w, uint8_t* dst) {
  UnsplitBytes(planes, stride, count, w, dst);
}

// The inverse of ShuffleBytes: dst[i * w + b] = src[b * n + i].
inline void UnshuffleBytes(const uint8_t* src, size_t n, size_t w, uint8_t* dst) {
  UnshufflePlanes(src, n, n, w, dst);
}

// Values [first, first + count) of a shuffled array of n values of width w, unshuffled into dst
// (count * w bytes): a pick takes one event's values out of an E block this way.
inline void GatherShuffled(
    const uint8_t* src, size_t n, size_t w, size_t first, size_t count, uint8_t* dst) {
  UnshufflePlanes(src + first, n, count, w, dst);
}

}  // namespace ferry::store
