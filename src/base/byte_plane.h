// Byte planes of fixed-width values: n values of w bytes stored as w planes of n bytes, plane b
// holding byte b of every value. RNTuple's split encodings (docs: ROOT's binary format
// specification, "split" column types) and the event store's shuffled blocks (store.md section
// 5) are this layout: floats with zero low mantissa bits and small integers then give long runs
// of equal bytes, which the codec compresses far better than interleaved values.
//
// One implementation for the RNTuple reader and writer and the store. Widths 2, 4 and 8 go
// through SIMD transposes chosen at run time (SSE2, which every x86-64 has, or AVX2 where the
// CPU has it and it measured faster for that width and direction), other widths and the tails
// bytewise. Thread-safe; the buffers never overlap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry {

enum class ByteIsa { kScalar, kSse2, kAvx2 };

// The newest instruction set this CPU runs (decided once).
ByteIsa BestByteIsa();
// What SplitBytes (split) or UnsplitBytes uses for width w: timed once per process on first
// use; FERRY_BYTE_ISA=scalar|sse2|avx2 in the environment forces one.
ByteIsa ChosenByteIsa(bool split, size_t w);
const char* ByteIsaName(ByteIsa isa);

// Interleaved to planes: dst[b * stride + i] = src[i * w + b] for i < n, b < w (stride >= n;
// the planes of a whole array have stride n).
void SplitBytes(const uint8_t* src, size_t n, size_t w, uint8_t* dst, size_t stride);
inline void SplitBytes(const uint8_t* src, size_t n, size_t w, uint8_t* dst) {
  SplitBytes(src, n, w, dst, n);
}

// Planes to interleaved: dst[i * w + b] = planes[b * stride + i] for i < n. With stride larger
// than n this gathers values [0, n) out of a longer split array (a pick's one event).
void UnsplitBytes(const uint8_t* planes, size_t stride, size_t n, size_t w, uint8_t* dst);
inline void UnsplitBytes(const uint8_t* planes, size_t n, size_t w, uint8_t* dst) {
  UnsplitBytes(planes, n, n, w, dst);
}

// The same with a chosen instruction set, for tests and benchmarks that compare them; an
// instruction set the CPU lacks falls back to the best it has.
void SplitBytesWith(
    ByteIsa isa, const uint8_t* src, size_t n, size_t w, uint8_t* dst, size_t stride);
void UnsplitBytesWith(
    ByteIsa isa, const uint8_t* planes, size_t stride, size_t n, size_t w, uint8_t* dst);

}  // namespace ferry
