#include "base/byte_plane.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define FERRY_BYTE_PLANE_X86 1
#endif

namespace ferry {
namespace {

// Bytewise, from value `first` on: what the SIMD kernels leave, and every other width.
void SplitScalar(
    const uint8_t* src, size_t first, size_t n, size_t w, uint8_t* dst, size_t stride) {
  for (size_t i = first; i < n; ++i) {
    const uint8_t* v = src + i * w;
    for (size_t b = 0; b < w; ++b) {
      dst[b * stride + i] = v[b];
    }
  }
}

void UnsplitScalar(
    const uint8_t* planes, size_t stride, size_t first, size_t n, size_t w, uint8_t* dst) {
  for (size_t b = 0; b < w; ++b) {
    const uint8_t* plane = planes + b * stride;
    for (size_t i = first; i < n; ++i) {
      dst[i * w + b] = plane[i];
    }
  }
}

#if defined(FERRY_BYTE_PLANE_X86)
__m128i Load16(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

void Store16(uint8_t* p, __m128i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
}

// 16 values of W bytes (W vectors) into their planes. Value k's byte b sits at index (k, b) of
// the 16W bytes and the planes want (b, k): a rotation of the index by log2(16) = 4 bits. One
// round of byte unpacks of vector j with vector j + W/2 rotates it by one bit, so four rounds
// transpose the block.
template <size_t W>
void Split16(const uint8_t* src, uint8_t* dst, size_t stride) {
  __m128i x[W];
  for (size_t j = 0; j < W; ++j) {
    x[j] = Load16(src + 16 * j);
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
    Store16(dst + b * stride, x[b]);
  }
}

// 16 values of W bytes out of the W planes, interleaved by unpacking bytes, then pairs of
// bytes, then quads: the compiler does not vectorise the strided gather of the plain loop.
template <size_t W>
void Unsplit16(const uint8_t* src, size_t stride, uint8_t* dst) {
  if constexpr (W == 2) {
    const __m128i b0 = Load16(src);
    const __m128i b1 = Load16(src + stride);
    Store16(dst, _mm_unpacklo_epi8(b0, b1));
    Store16(dst + 16, _mm_unpackhi_epi8(b0, b1));
  } else {
    __m128i q[2][4];  // per group of four planes: values 4k .. 4k + 3, four bytes each
    for (size_t half = 0; half < W / 4; ++half) {
      const uint8_t* s = src + half * 4 * stride;
      const __m128i b0 = Load16(s);
      const __m128i b1 = Load16(s + stride);
      const __m128i b2 = Load16(s + 2 * stride);
      const __m128i b3 = Load16(s + 3 * stride);
      const __m128i lo01 = _mm_unpacklo_epi8(b0, b1);
      const __m128i hi01 = _mm_unpackhi_epi8(b0, b1);
      const __m128i lo23 = _mm_unpacklo_epi8(b2, b3);
      const __m128i hi23 = _mm_unpackhi_epi8(b2, b3);
      q[half][0] = _mm_unpacklo_epi16(lo01, lo23);
      q[half][1] = _mm_unpackhi_epi16(lo01, lo23);
      q[half][2] = _mm_unpacklo_epi16(hi01, hi23);
      q[half][3] = _mm_unpackhi_epi16(hi01, hi23);
    }
    for (size_t k = 0; k < 4; ++k) {
      if constexpr (W == 4) {
        Store16(dst + 16 * k, q[0][k]);
      } else {
        Store16(dst + 32 * k, _mm_unpacklo_epi32(q[0][k], q[1][k]));
        Store16(dst + 32 * k + 16, _mm_unpackhi_epi32(q[0][k], q[1][k]));
      }
    }
  }
}

template <size_t W>
size_t SplitSse2(const uint8_t* src, size_t n, uint8_t* dst, size_t stride) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Split16<W>(src + i * W, dst + i, stride);
  }
  return i;
}

template <size_t W>
size_t UnsplitSse2(const uint8_t* planes, size_t stride, size_t n, uint8_t* dst) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Unsplit16<W>(planes + i, stride, dst + i * W);
  }
  return i;
}

// The AVX2 kernels do 32 values with the same unpacks, which act within each 128-bit lane:
// lane 0 carries values 0-15 and lane 1 values 16-31 through the SSE2 algorithm side by side.
__attribute__((target("avx2"))) __m256i Load32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

__attribute__((target("avx2"))) void Store32(uint8_t* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

// Vector j gets bytes [16j, 16j + 16) of values 0-15 in lane 0 and the same bytes of values
// 16-31 in lane 1; after the four rounds vector b is plane b of all 32 values, in order.
template <size_t W>
__attribute__((target("avx2"))) void Split32Avx2(const uint8_t* src, uint8_t* dst, size_t stride) {
  __m256i x[W];
  for (size_t j = 0; j < W; ++j) {
    x[j] = _mm256_inserti128_si256(_mm256_castsi128_si256(Load16(src + 16 * j)),
                                   Load16(src + 16 * W + 16 * j), 1);
  }
  for (int round = 0; round < 4; ++round) {
    __m256i y[W];
    for (size_t j = 0; j < W / 2; ++j) {
      y[2 * j] = _mm256_unpacklo_epi8(x[j], x[j + W / 2]);
      y[2 * j + 1] = _mm256_unpackhi_epi8(x[j], x[j + W / 2]);
    }
    for (size_t j = 0; j < W; ++j) {
      x[j] = y[j];
    }
  }
  for (size_t b = 0; b < W; ++b) {
    Store32(dst + b * stride, x[b]);
  }
}

// The stores put the lanes' quarters back in value order.
template <size_t W>
__attribute__((target("avx2"))) void Unsplit32Avx2(const uint8_t* src,
                                                   size_t stride,
                                                   uint8_t* dst) {
  if constexpr (W == 2) {
    const __m256i b0 = Load32(src);
    const __m256i b1 = Load32(src + stride);
    const __m256i lo = _mm256_unpacklo_epi8(b0, b1);  // lane l: values 16l .. 16l + 7
    const __m256i hi = _mm256_unpackhi_epi8(b0, b1);  // lane l: values 16l + 8 .. 16l + 15
    Store32(dst, _mm256_permute2x128_si256(lo, hi, 0x20));
    Store32(dst + 32, _mm256_permute2x128_si256(lo, hi, 0x31));
    return;
  }
  __m256i q[2][4];
  for (size_t half = 0; half < W / 4; ++half) {
    const uint8_t* s = src + half * 4 * stride;
    const __m256i b0 = Load32(s);
    const __m256i b1 = Load32(s + stride);
    const __m256i b2 = Load32(s + 2 * stride);
    const __m256i b3 = Load32(s + 3 * stride);
    const __m256i lo01 = _mm256_unpacklo_epi8(b0, b1);
    const __m256i hi01 = _mm256_unpackhi_epi8(b0, b1);
    const __m256i lo23 = _mm256_unpacklo_epi8(b2, b3);
    const __m256i hi23 = _mm256_unpackhi_epi8(b2, b3);
    q[half][0] = _mm256_unpacklo_epi16(lo01, lo23);
    q[half][1] = _mm256_unpackhi_epi16(lo01, lo23);
    q[half][2] = _mm256_unpacklo_epi16(hi01, hi23);
    q[half][3] = _mm256_unpackhi_epi16(hi01, hi23);
  }
  if constexpr (W == 4) {  // q[0][k], lane l: values 16l + 4k .. 16l + 4k + 3
    Store32(dst, _mm256_permute2x128_si256(q[0][0], q[0][1], 0x20));
    Store32(dst + 32, _mm256_permute2x128_si256(q[0][2], q[0][3], 0x20));
    Store32(dst + 64, _mm256_permute2x128_si256(q[0][0], q[0][1], 0x31));
    Store32(dst + 96, _mm256_permute2x128_si256(q[0][2], q[0][3], 0x31));
  } else {  // lo/hi, lane l: values 16l + 4k, +1 and 16l + 4k + 2, +3
    for (size_t k = 0; k < 4; ++k) {
      const __m256i lo = _mm256_unpacklo_epi32(q[0][k], q[1][k]);
      const __m256i hi = _mm256_unpackhi_epi32(q[0][k], q[1][k]);
      Store32(dst + 32 * k, _mm256_permute2x128_si256(lo, hi, 0x20));
      Store32(dst + 128 + 32 * k, _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
}

template <size_t W>
__attribute__((target("avx2"))) size_t SplitAvx2(const uint8_t* src,
                                                 size_t n,
                                                 uint8_t* dst,
                                                 size_t stride) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    Split32Avx2<W>(src + i * W, dst + i, stride);
  }
  return i + SplitSse2<W>(src + i * W, n - i, dst + i, stride);
}

template <size_t W>
__attribute__((target("avx2"))) size_t UnsplitAvx2(const uint8_t* planes,
                                                   size_t stride,
                                                   size_t n,
                                                   uint8_t* dst) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    Unsplit32Avx2<W>(planes + i, stride, dst + i * W);
  }
  return i + UnsplitSse2<W>(planes + i, stride, n - i, dst + i * W);
}

// How many values the SIMD kernels did (the rest is the caller's, bytewise).
size_t SplitVector(
    ByteIsa isa, const uint8_t* src, size_t n, size_t w, uint8_t* dst, size_t stride) {
  const bool avx2 = isa == ByteIsa::kAvx2;
  switch (w) {
    case 2:
      return avx2 ? SplitAvx2<2>(src, n, dst, stride) : SplitSse2<2>(src, n, dst, stride);
    case 4:
      return avx2 ? SplitAvx2<4>(src, n, dst, stride) : SplitSse2<4>(src, n, dst, stride);
    case 8:
      return avx2 ? SplitAvx2<8>(src, n, dst, stride) : SplitSse2<8>(src, n, dst, stride);
    default:
      return 0;
  }
}

size_t UnsplitVector(
    ByteIsa isa, const uint8_t* planes, size_t stride, size_t n, size_t w, uint8_t* dst) {
  const bool avx2 = isa == ByteIsa::kAvx2;
  switch (w) {
    case 2:
      return avx2 ? UnsplitAvx2<2>(planes, stride, n, dst) : UnsplitSse2<2>(planes, stride, n, dst);
    case 4:
      return avx2 ? UnsplitAvx2<4>(planes, stride, n, dst) : UnsplitSse2<4>(planes, stride, n, dst);
    case 8:
      return avx2 ? UnsplitAvx2<8>(planes, stride, n, dst) : UnsplitSse2<8>(planes, stride, n, dst);
    default:
      return 0;
  }
}
#endif

ByteIsa Usable(ByteIsa isa) {
  const ByteIsa best = BestByteIsa();
  return static_cast<int>(isa) > static_cast<int>(best) ? best : isa;
}

// Which kernel a width gets. AVX2 is not faster everywhere: on this project's 2-core VM it
// wins splits of widths 2 and 4 by 1.3-1.4x but loses unsplits of width 8 (0.6x of SSE2), its
// cross-lane permutes being slow there. So each (direction, width) is timed once, on first
// use, on a page-sized block (16 Ki values, about a millisecond for all of them), and takes
// AVX2 when it is at least 5% faster. FERRY_BYTE_ISA=scalar|sse2|avx2 forces one (benchmarks).
ByteIsa Calibrate(bool split, size_t w) {
  const ByteIsa best = BestByteIsa();
  if (best != ByteIsa::kAvx2) {
    return best;
  }
  constexpr size_t kValues = 16384;
  std::vector<uint8_t> a(kValues * w, 0x5A);
  std::vector<uint8_t> b(kValues * w);
  auto time = [&](ByteIsa isa) {
    auto fastest = std::chrono::steady_clock::duration::max();
    for (int run = 0; run < 32; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      if (split) {
        SplitBytesWith(isa, a.data(), kValues, w, b.data(), kValues);
      } else {
        UnsplitBytesWith(isa, a.data(), kValues, kValues, w, b.data());
      }
      fastest = std::min(fastest, std::chrono::steady_clock::now() - t0);
    }
    return fastest;
  };
  // AVX2 only when clearly faster: near a tie, noise on a busy machine would decide.
  return time(ByteIsa::kAvx2) * 21 < time(ByteIsa::kSse2) * 20 ? ByteIsa::kAvx2 : ByteIsa::kSse2;
}

std::optional<ByteIsa> Forced() {
  static const std::optional<ByteIsa> forced = []() -> std::optional<ByteIsa> {
    const char* v = std::getenv("FERRY_BYTE_ISA");  // NOLINT(concurrency-mt-unsafe): read once
    if (v == nullptr) {
      return std::nullopt;
    }
    for (ByteIsa isa : {ByteIsa::kScalar, ByteIsa::kSse2, ByteIsa::kAvx2}) {
      if (std::strcmp(v, ByteIsaName(isa)) == 0) {
        return isa;
      }
    }
    return std::nullopt;
  }();
  return forced;
}

ByteIsa Chosen(bool split, size_t w) {
  if (auto forced = Forced()) {
    return *forced;
  }
  const int slot = w == 2 ? 0 : w == 4 ? 1 : w == 8 ? 2 : -1;
  if (slot < 0) {
    return ByteIsa::kScalar;  // no kernel: bytewise whatever is asked
  }
  static std::atomic<int> chosen[2][3] = {{-1, -1, -1}, {-1, -1, -1}};
  std::atomic<int>& c = chosen[split ? 0 : 1][slot];
  int isa = c.load(std::memory_order_relaxed);
  if (isa < 0) {  // two threads may both time it: either answer is right
    isa = static_cast<int>(Calibrate(split, w));
    c.store(isa, std::memory_order_relaxed);
  }
  return static_cast<ByteIsa>(isa);
}

}  // namespace

ByteIsa BestByteIsa() {
#if defined(FERRY_BYTE_PLANE_X86)
  // Chosen on first use (safe from other files' static initialisers).
  static const ByteIsa best = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? ByteIsa::kAvx2 : ByteIsa::kSse2;
  }();
  return best;
#else
  return ByteIsa::kScalar;
#endif
}

const char* ByteIsaName(ByteIsa isa) {
  switch (isa) {
    case ByteIsa::kAvx2:
      return "avx2";
    case ByteIsa::kSse2:
      return "sse2";
    case ByteIsa::kScalar:
      break;
  }
  return "scalar";
}

void SplitBytesWith(
    ByteIsa isa, const uint8_t* src, size_t n, size_t w, uint8_t* dst, size_t stride) {
  if (w == 1) {
    if (n != 0) {  // an empty column's buffers may be null, which memcpy must not get
      std::memcpy(dst, src, n);
    }
    return;
  }
  size_t done = 0;
#if defined(FERRY_BYTE_PLANE_X86)
  if (const ByteIsa usable = Usable(isa); usable != ByteIsa::kScalar) {
    done = SplitVector(usable, src, n, w, dst, stride);
  }
#else
  (void)isa;
#endif
  SplitScalar(src, done, n, w, dst, stride);
}

void UnsplitBytesWith(
    ByteIsa isa, const uint8_t* planes, size_t stride, size_t n, size_t w, uint8_t* dst) {
  if (w == 1) {
    if (n != 0) {
      std::memcpy(dst, planes, n);
    }
    return;
  }
  size_t done = 0;
#if defined(FERRY_BYTE_PLANE_X86)
  if (const ByteIsa usable = Usable(isa); usable != ByteIsa::kScalar) {
    done = UnsplitVector(usable, planes, stride, n, w, dst);
  }
#else
  (void)isa;
#endif
  UnsplitScalar(planes, stride, done, n, w, dst);
}

void SplitBytes(const uint8_t* src, size_t n, size_t w, uint8_t* dst, size_t stride) {
  SplitBytesWith(Chosen(true, w), src, n, w, dst, stride);
}

void UnsplitBytes(const uint8_t* planes, size_t stride, size_t n, size_t w, uint8_t* dst) {
  UnsplitBytesWith(Chosen(false, w), planes, stride, n, w, dst);
}

ByteIsa ChosenByteIsa(bool split, size_t w) {
  return Chosen(split, w);
}

}  // namespace ferry
