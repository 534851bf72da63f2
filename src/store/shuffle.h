// Byte shuffle of typed values (docs/format/store.md section 5): the bytes of n values of width
// w are stored as w planes of n bytes (plane b holds byte b of every value). Floats whose low
// mantissa bits are zero, and integers of small magnitude, then give long runs of equal bytes
// that the codec compresses far better than the interleaved values. Width 1 is a copy.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ferry::store {

#if defined(__SSE2__)
// Shuffles 16 values of width W (2, 4 or 8: W vectors of 16 bytes) into their planes at
// dst + b * n. Value k's byte b sits at bit index (k, b) of the 16W bytes; the planes want
// (b, k), a rotation of the index by log2(16) = 4 bits. One round of byte unpacks of vector j
// with vector j + W/2 rotates the index by one bit, so four rounds transpose the block.
template <size_t W>
inline void Shuffle16(const uint8_t* src, size_t n, uint8_t* dst) {
  __m128i x[W];
  for (size_t j = 0; j < W; ++j) {
    x[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * j));
  }
  for (int round = 0; round < 4; ++round) {
    __m128i y[W];
    for (size_t j = 0; j < W / 2; ++j) {
      y[2 * j] = _mm_unpacklo_epi8(x[j], x[j + W / 2]);
      y[2 * j + 1] = _mm_unpackhi_epi8(x[j], x[j + W / 2]);
    }
    for (size_t j = 0; j < W; ++j) {
      x[j] = y[j];
    }
  }
  for (size_t b = 0; b < W; ++b) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + b * n), x[b]);
  }
}
#endif

// dst[b * n + i] = src[i * w + b]; dst and src do not overlap. Widths 2, 4 and 8 go 16 values
// at a time through SSE2 (Shuffle16), the rest bytewise.
inline void ShuffleBytes(const uint8_t* src, size_t n, size_t w, uint8_t* dst) {
  if (w == 1) {
    if (n != 0) {  // an empty column's buffers may be null, which memcpy must not get
      std::memcpy(dst, src, n);
    }
    return;
  }
  size_t i = 0;
#if defined(__SSE2__)
  for (; i + 16 <= n && (w == 2 || w == 4 || w == 8); i += 16) {
    if (w == 2) {
      Shuffle16<2>(src + i * 2, n, dst + i);
    } else if (w == 4) {
      Shuffle16<4>(src + i * 4, n, dst + i);
    } else {
      Shuffle16<8>(src + i * 8, n, dst + i);
    }
  }
#endif
  for (; i < n; ++i) {
    const uint8_t* v = src + i * w;
    for (size_t b = 0; b < w; ++b) {
      dst[b * n + i] = v[b];
    }
  }
}

// Values of width w whose byte b is at planes + b * stride + i (i < count), interleaved into dst
// (count * w bytes). Widths 4 and 8, the floats, ints and 64-bit ids of NanoAOD, transpose 16
// values at a time with SSE2 byte/word unpacks (every x86-64 has them); the rest bytewise.
inline void UnshufflePlanes(
    const uint8_t* planes, size_t stride, size_t count, size_t w, uint8_t* dst) {
  if (w == 1) {
    if (count != 0) {
      std::memcpy(dst, planes, count);
    }
    return;
  }
  size_t i = 0;
#if defined(__SSE2__)
  if (w == 4) {
    const uint8_t* p0 = planes;
    const uint8_t* p1 = planes + stride;
    const uint8_t* p2 = planes + 2 * stride;
    const uint8_t* p3 = planes + 3 * stride;
    for (; i + 16 <= count; i += 16) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0 + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1 + i));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p2 + i));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p3 + i));
      const __m128i ab0 = _mm_unpacklo_epi8(a, b);
      const __m128i ab1 = _mm_unpackhi_epi8(a, b);
      const __m128i cd0 = _mm_unpacklo_epi8(c, d);
      const __m128i cd1 = _mm_unpackhi_epi8(c, d);
      auto* o = reinterpret_cast<__m128i*>(dst + i * 4);
      _mm_storeu_si128(o, _mm_unpacklo_epi16(ab0, cd0));
      _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, cd0));
      _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, cd1));
      _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, cd1));
    }
  } else if (w == 8) {
    __m128i x[8];
    for (; i + 16 <= count; i += 16) {
      for (size_t b = 0; b < 8; ++b) {
        x[b] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + b * stride + i));
      }
      __m128i y[8];
      for (size_t b = 0; b < 4; ++b) {
        y[2 * b] = _mm_unpacklo_epi8(x[2 * b], x[2 * b + 1]);
        y[2 * b + 1] = _mm_unpackhi_epi8(x[2 * b], x[2 * b + 1]);
      }
      // y: ab0 ab1 cd0 cd1 ef0 ef1 gh0 gh1 -> 4-byte groups abcd / efgh, values 0-3 ... 12-15
      const __m128i abcd[4] = {_mm_unpacklo_epi16(y[0], y[2]), _mm_unpackhi_epi16(y[0], y[2]),
                               _mm_unpacklo_epi16(y[1], y[3]), _mm_unpackhi_epi16(y[1], y[3])};
      const __m128i efgh[4] = {_mm_unpacklo_epi16(y[4], y[6]), _mm_unpackhi_epi16(y[4], y[6]),
                               _mm_unpacklo_epi16(y[5], y[7]), _mm_unpackhi_epi16(y[5], y[7])};
      auto* o = reinterpret_cast<__m128i*>(dst + i * 8);
      for (size_t q = 0; q < 4; ++q) {
        _mm_storeu_si128(o + 2 * q, _mm_unpacklo_epi32(abcd[q], efgh[q]));
        _mm_storeu_si128(o + 2 * q + 1, _mm_unpackhi_epi32(abcd[q], efgh[q]));
      }
    }
  }
#endif
  for (size_t b = 0; b < w; ++b) {
    const uint8_t* plane = planes + b * stride;
    for (size_t k = i; k < count; ++k) {
      dst[k * w + b] = plane[k];
    }
  }
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
