#include "base/byte_swap.h"

#include <immintrin.h>

#include <cstring>

namespace ferry {
namespace {

// Portable loop (any CPU; the tail of the vector loops).
template <class U>
void SwapLoop(uint8_t* __restrict out, const uint8_t* __restrict src, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    U v;
    std::memcpy(&v, src + i * sizeof(U), sizeof(U));
    if constexpr (sizeof(U) == 2) {
      v = __builtin_bswap16(v);
    } else if constexpr (sizeof(U) == 4) {
      v = __builtin_bswap32(v);
    } else {
      v = __builtin_bswap64(v);
    }
    std::memcpy(out + i * sizeof(U), &v, sizeof(U));
  }
}

// AVX2: one byte shuffle reverses eight 4-byte values (or sixteen 2-byte, four 8-byte) at a
// time. x86-64's baseline (SSE2) has no byte shuffle, so the compiler's vectoriser leaves the
// portable loop scalar: one bswap per value.
template <class U>
__attribute__((target("avx2"))) void SwapAvx2(uint8_t* out, const uint8_t* src, size_t count) {
  __m256i mask;
  if constexpr (sizeof(U) == 2) {
    mask = _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14,  //
                            1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  } else if constexpr (sizeof(U) == 4) {
    mask = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,  //
                            3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
  } else {
    mask = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,  //
                            7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
  }
  const size_t bytes = count * sizeof(U);
  size_t at = 0;
  for (; at + 64 <= bytes; at += 64) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at + 32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + at), _mm256_shuffle_epi8(a, mask));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + at + 32), _mm256_shuffle_epi8(b, mask));
  }
  for (; at + 32 <= bytes; at += 32) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + at), _mm256_shuffle_epi8(a, mask));
  }
  SwapLoop<U>(out + at, src + at, (bytes - at) / sizeof(U));
}

using SwapFn = void (*)(uint8_t*, const uint8_t*, size_t);

struct SwapTable {
  SwapFn s16, s32, s64;
};

SwapTable ChooseSwaps() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) {
    return {SwapAvx2<uint16_t>, SwapAvx2<uint32_t>, SwapAvx2<uint64_t>};
  }
  return {SwapLoop<uint16_t>, SwapLoop<uint32_t>, SwapLoop<uint64_t>};
}

// Chosen on first use (safe from static initialisers of other files).
const SwapTable& Swaps() {
  static const SwapTable table = ChooseSwaps();
  return table;
}

}  // namespace

void SwapCopy(uint8_t* out, const uint8_t* src, size_t count, size_t value_size) {
  if (count == 0) {
    return;
  }
  switch (value_size) {
    case 1:
      std::memcpy(out, src, count);
      break;
    case 2:
      Swaps().s16(out, src, count);
      break;
    case 4:
      Swaps().s32(out, src, count);
      break;
    case 8:
      Swaps().s64(out, src, count);
      break;
    default:
      break;
  }
}

}  // namespace ferry
