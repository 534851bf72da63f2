// Byte-order conversion of packed arrays: big-endian ROOT baskets <-> native values. The swap
// is its own inverse, so one function serves the reader and the writer. These are the hottest
// loops of the reader after decompression: AVX2 byte shuffles where the CPU has them (chosen at
// run time), a portable loop elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/byte_vector.h"

namespace ferry {

// Copies count values of value_size bytes (1, 2, 4 or 8) from src to out, reversing the byte
// order of each. out and src must not overlap. src may be null when count is 0.
void SwapCopy(uint8_t* out, const uint8_t* src, size_t count, size_t value_size);

// Appends the byte-swapped values to dst.
inline void AppendByteSwapped(const uint8_t* src,
                              size_t count,
                              size_t value_size,
                              ByteVector* dst) {
  if (count == 0 || value_size == 0) {
    return;
  }
  size_t at = dst->size();
  dst->resize(at + count * value_size);
  SwapCopy(dst->data() + at, src, count, value_size);
}

}  // namespace ferry
