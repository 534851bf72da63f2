// Byte shuffle of typed values (docs/format/store.md section 5): the bytes of n values of width
// w are stored as w planes of n bytes (plane b holds byte b of every value). Floats whose low
// mantissa bits are zero, and integers of small magnitude, then give long runs of equal bytes
// that the codec compresses far better than the interleaved values. Width 1 is a copy.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ferry::store {

// dst[b * n + i] = src[i * w + b]; dst and src do not overlap.
inline void ShuffleBytes(const uint8_t* src, size_t n, size_t w, uint8_t* dst) {
  if (w == 1) {
    std::memcpy(dst, src, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* v = src + i * w;
    for (size_t b = 0; b < w; ++b) {
      dst[b * n + i] = v[b];
    }
  }
}

// The inverse: dst[i * w + b] = src[b * n + i].
inline void UnshuffleBytes(const uint8_t* src, size_t n, size_t w, uint8_t* dst) {
  if (w == 1) {
    std::memcpy(dst, src, n);
    return;
  }
  for (size_t b = 0; b < w; ++b) {
    const uint8_t* plane = src + b * n;
    for (size_t i = 0; i < n; ++i) {
      dst[i * w + b] = plane[i];
    }
  }
}

// Values [first, first + count) of a shuffled array of n values of width w, unshuffled into dst
// (count * w bytes): a pick takes one event's values out of an E block this way.
inline void GatherShuffled(const uint8_t* src, size_t n, size_t w, size_t first, size_t count,
                           uint8_t* dst) {
  for (size_t b = 0; b < w; ++b) {
    const uint8_t* plane = src + b * n + first;
    for (size_t i = 0; i < count; ++i) {
      dst[i * w + b] = plane[i];
    }
  }
}

}  // namespace ferry::store
