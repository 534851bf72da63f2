// Bit-level helpers shared by the RNTuple page decoders (rntuple_page.cc, the value path, and
// rntuple_page_native.cc, the bulk path): half floats and LSB-first packed items.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>

namespace ferry::rootio {

// IEEE-754 binary16 to binary32 (exact: every half is a float).
inline float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0x1F) {  // inf, nan
    return std::bit_cast<float>(sign | 0x7F800000 | (mant << 13));
  }
  if (exp == 0) {  // zero, subnormal: mant * 2^-24
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

// Item i of an LSB-first stream of `bits`-bit items (bits <= 32); bytes must hold the item.
inline uint32_t PackedItem(std::span<const uint8_t> bytes, uint64_t i, uint16_t bits) {
  uint64_t bit = i * bits;
  auto at = static_cast<size_t>(bit / 8);
  uint64_t window = 0;
  std::memcpy(&window, bytes.data() + at, std::min<size_t>(8, bytes.size() - at));
  window >>= bit % 8;
  return static_cast<uint32_t>(window & ((uint64_t{1} << bits) - 1));
}

}  // namespace ferry::rootio
