#include "cache/page_crc.h"

#include <array>
#include <cstring>

#include "base/crc32c.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ferry::cache {

#if defined(__x86_64__)
namespace {

// Stream lengths: long streams for whole pages, short ones for fragments.
constexpr size_t kLong = 1344;  // 3 x 1344 = 4032 bytes per round
constexpr size_t kShort = 128;  // 3 x 128 = 384 bytes per round

// Shift[k][b]: the register state b << 8k advanced over L zero bytes.
using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

__attribute__((target("sse4.2"))) uint32_t AdvanceZeros(uint32_t state, size_t n) {
  uint64_t c = state;
  for (size_t i = 0; i < n; i += 8) {
    c = _mm_crc32_u64(c, 0);
  }
  return static_cast<uint32_t>(c);
}

ShiftTable MakeShift(size_t n) {
  ShiftTable t{};
  for (unsigned k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      t[k][b] = AdvanceZeros(b << (8 * k), n);
    }
  }
  return t;
}

inline uint32_t Shift(const ShiftTable& t, uint32_t s) {
  return t[0][s & 0xFF] ^ t[1][(s >> 8) & 0xFF] ^ t[2][(s >> 16) & 0xFF] ^ t[3][s >> 24];
}

inline uint64_t Load64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// Advances `state` over 3 * L bytes at p as three interleaved streams.
template <size_t L>
__attribute__((target("sse4.2"))) inline uint32_t ThreeWay(uint32_t state,
                                                           const uint8_t* p,
                                                           const ShiftTable& shift) {
  uint64_t a = state;
  uint64_t b = 0;
  uint64_t c = 0;
  for (size_t i = 0; i < L; i += 8) {
    a = _mm_crc32_u64(a, Load64(p + i));
    b = _mm_crc32_u64(b, Load64(p + L + i));
    c = _mm_crc32_u64(c, Load64(p + 2 * L + i));
  }
  const uint32_t ab = Shift(shift, static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b);
  return Shift(shift, ab) ^ static_cast<uint32_t>(c);
}

__attribute__((target("sse4.2"))) uint32_t PageCrcSse42(const uint8_t* p, size_t n) {
  static const ShiftTable kLongShift = MakeShift(kLong);
  static const ShiftTable kShortShift = MakeShift(kShort);
  uint32_t state = 0xFFFFFFFFu;
  while (n >= 3 * kLong) {
    state = ThreeWay<kLong>(state, p, kLongShift);
    p += 3 * kLong;
    n -= 3 * kLong;
  }
  while (n >= 3 * kShort) {
    state = ThreeWay<kShort>(state, p, kShortShift);
    p += 3 * kShort;
    n -= 3 * kShort;
  }
  uint64_t c = state;
  for (; n >= 8; n -= 8, p += 8) {
    c = _mm_crc32_u64(c, Load64(p));
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n) {
    c32 = _mm_crc32_u8(c32, *p++);
  }
  return ~c32;
}

bool HaveSse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}

}  // namespace
#endif

uint32_t PageCrc(const void* data, size_t size) {
#if defined(__x86_64__)
  static const bool kSse42 = HaveSse42();
  if (kSse42) {
    return PageCrcSse42(static_cast<const uint8_t*>(data), size);
  }
#endif
  return crc32c::Value(data, size);
}

}  // namespace ferry::cache
