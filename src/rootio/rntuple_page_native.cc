// The bulk page decoder: RNTuple elements into packed native values, for readers that fill
// arrays (the analysis, conversion) rather than RntupleValue trees. Byte-split pages are
// transposed straight into the output, and zigzag and delta are undone there in place, so a
// page costs one pass over its bytes plus one for the integer transforms; bit columns unpack
// eight at a time from a table.
#include <immintrin.h>

#include <array>
#include <cstring>
#include <string>

#include "base/endian.h"
#include "base/hash.h"
#include "rootio/rntuple_bits.h"
#include "rootio/rntuple_blob.h"
#include "rootio/rntuple_page.h"

namespace ferry::rootio {
namespace {

__m128i Load16(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

void Store16(uint8_t* p, __m128i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
}

// 16 elements of W bytes from the W byte planes, interleaved by unpacking bytes, then pairs
// of bytes, then quads (SSE2, every x86-64 has it): the compiler does not vectorise the
// strided gather of the plain loop, which made the transpose most of a split page's cost.
template <size_t W>
void Unsplit16(const uint8_t* src, size_t n, uint8_t* dst) {
  if constexpr (W == 2) {
    const __m128i b0 = Load16(src);
    const __m128i b1 = Load16(src + n);
    Store16(dst, _mm_unpacklo_epi8(b0, b1));
    Store16(dst + 16, _mm_unpackhi_epi8(b0, b1));
  } else {
    // Bytes 0-3 of the 16 elements, as four vectors of four elements each.
    __m128i q[2][4];
    for (size_t half = 0; half < W / 4; ++half) {
      const uint8_t* s = src + half * 4 * n;
      const __m128i b0 = Load16(s);
      const __m128i b1 = Load16(s + n);
      const __m128i b2 = Load16(s + 2 * n);
      const __m128i b3 = Load16(s + 3 * n);
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

// Unsplit16 on 32 elements with AVX2 (W = 4 or 8): the same unpacks, which act within each
// 128-bit lane, so lane 0 holds elements 0-15 and lane 1 elements 16-31; the stores put the
// lanes' quarters back in element order. Half the instructions per byte of SSE2's.
__attribute__((target("avx2"))) __m256i Load32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

__attribute__((target("avx2"))) void Store32(uint8_t* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

template <size_t W>
__attribute__((target("avx2"))) void Unsplit32Avx2(const uint8_t* src, size_t n, uint8_t* dst) {
  __m256i q[2][4];
  for (size_t half = 0; half < W / 4; ++half) {
    const uint8_t* s = src + half * 4 * n;
    const __m256i b0 = Load32(s);
    const __m256i b1 = Load32(s + n);
    const __m256i b2 = Load32(s + 2 * n);
    const __m256i b3 = Load32(s + 3 * n);
    const __m256i lo01 = _mm256_unpacklo_epi8(b0, b1);
    const __m256i hi01 = _mm256_unpackhi_epi8(b0, b1);
    const __m256i lo23 = _mm256_unpacklo_epi8(b2, b3);
    const __m256i hi23 = _mm256_unpackhi_epi8(b2, b3);
    q[half][0] = _mm256_unpacklo_epi16(lo01, lo23);
    q[half][1] = _mm256_unpackhi_epi16(lo01, lo23);
    q[half][2] = _mm256_unpacklo_epi16(hi01, hi23);
    q[half][3] = _mm256_unpackhi_epi16(hi01, hi23);
  }
  if constexpr (W == 4) {  // q[0][k], lane l: elements 16l + 4k .. 16l + 4k + 3
    Store32(dst, _mm256_permute2x128_si256(q[0][0], q[0][1], 0x20));
    Store32(dst + 32, _mm256_permute2x128_si256(q[0][2], q[0][3], 0x20));
    Store32(dst + 64, _mm256_permute2x128_si256(q[0][0], q[0][1], 0x31));
    Store32(dst + 96, _mm256_permute2x128_si256(q[0][2], q[0][3], 0x31));
  } else {  // lo/hi, lane l: elements 16l + 4k, +1 and 16l + 4k + 2, +3
    for (size_t k = 0; k < 4; ++k) {
      const __m256i lo = _mm256_unpacklo_epi32(q[0][k], q[1][k]);
      const __m256i hi = _mm256_unpackhi_epi32(q[0][k], q[1][k]);
      Store32(dst + 32 * k, _mm256_permute2x128_si256(lo, hi, 0x20));
      Store32(dst + 128 + 32 * k, _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
}

// Element i's byte b is at src[b * n + i]; dst gets the n elements of W bytes back to back.
template <size_t W>
void UnsplitTail(const uint8_t* src, size_t n, size_t i, uint8_t* dst) {
  for (; i + 16 <= n; i += 16) {
    Unsplit16<W>(src + i, n, dst + i * W);
  }
  for (; i < n; ++i) {
    for (size_t b = 0; b < W; ++b) {
      dst[i * W + b] = src[b * n + i];
    }
  }
}

template <size_t W>
__attribute__((target("avx2"))) void UnsplitIntoAvx2(const uint8_t* src, size_t n, uint8_t* dst) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    Unsplit32Avx2<W>(src + i, n, dst + i * W);
  }
  UnsplitTail<W>(src, n, i, dst);
}

template <size_t W>
void UnsplitInto(const uint8_t* src, size_t n, uint8_t* dst) {
  UnsplitTail<W>(src, n, 0, dst);
}

using UnsplitFn = void (*)(const uint8_t*, size_t, uint8_t*);

struct UnsplitTable {
  UnsplitFn w4, w8;
};

// Chosen on first use (safe from static initialisers of other files).
const UnsplitTable& Unsplits() {
  static const UnsplitTable table = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? UnsplitTable{UnsplitIntoAvx2<4>, UnsplitIntoAvx2<8>}
                                          : UnsplitTable{UnsplitInto<4>, UnsplitInto<8>};
  }();
  return table;
}

void CopyElements(const uint8_t* src, size_t n, size_t width, bool split, uint8_t* dst) {
  if (!split) {
    std::memcpy(dst, src, n * width);
    return;
  }
  switch (width) {
    case 2:
      UnsplitInto<2>(src, n, dst);
      break;
    case 4:
      Unsplits().w4(src, n, dst);
      break;
    default:
      Unsplits().w8(src, n, dst);
      break;
  }
}

// One byte of a bit column as the 8 bytes (0 or 1, lowest bit first) it unpacks to.
constexpr std::array<uint64_t, 256> kBitBytes = [] {
  std::array<uint64_t, 256> t{};
  for (uint64_t v = 0; v < 256; ++v) {
    for (uint64_t k = 0; k < 8; ++k) {
      t[v] |= ((v >> k) & 1) << (8 * k);
    }
  }
  return t;
}();

// Bit i of the page (bit i % 8 of byte i / 8) becomes dst[i]: 8 at a time from kBitBytes.
void UnpackBits(const uint8_t* src, size_t n, uint8_t* dst) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    StoreLE<uint64_t>(dst + i, kBitBytes[src[i / 8]]);
  }
  for (; i < n; ++i) {
    dst[i] = (src[i / 8] >> (i % 8)) & 1;
  }
}

template <class U>
void UnzigzagInPlace(uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    auto u = LoadLE<U>(p + i * sizeof(U));
    StoreLE<U>(p + i * sizeof(U), static_cast<U>((u >> 1) ^ (U{0} - (u & 1))));
  }
}

// Index elements as uint64: 32-bit ones widened, split ones (deltas within the page) summed.
void DecodeIndex(const ColumnTypeInfo& info,
                 std::span<const uint8_t> bytes,
                 uint32_t n,
                 uint16_t bits,
                 uint8_t* dst) {
  const uint8_t* src = bytes.data();
  if (bits == 32) {
    if (info.split_width != 0) {
      // Transposed into the upper half of dst, then widened forward: element i's 8 bytes end
      // at 8i + 8 <= 4n + 4i + 4 whenever i < n, so no unread element is overwritten.
      Unsplits().w4(src, n, dst + size_t{n} * 4);
      src = dst + size_t{n} * 4;
    }
    if (info.delta) {  // widened and summed in one pass (element i is read before it is written)
      uint64_t sum = 0;
      for (size_t i = 0; i < n; ++i) {
        sum += LoadLE<uint32_t>(src + i * 4);  // unsigned: damaged deltas wrap, caught later
        StoreLE<uint64_t>(dst + i * 8, sum);
      }
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      StoreLE<uint64_t>(dst + i * 8, LoadLE<uint32_t>(src + i * 4));
    }
  } else {
    CopyElements(src, n, 8, info.split_width != 0, dst);
  }
  if (info.delta) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
      sum += LoadLE<uint64_t>(dst + i * 8);  // unsigned: damaged deltas wrap, caught later
      StoreLE<uint64_t>(dst + i * 8, sum);
    }
  }
}

// Reals stored in another form than an IEEE float or double (Real32Quant may have 32 bits).
bool IsConvertedReal(ColumnType t) {
  return t == ColumnType::kReal16 || t == ColumnType::kSplitReal16 || t == ColumnType::kReal32Trunc
         || t == ColumnType::kReal32Quant;
}

// Reals stored as halves, truncated or quantized floats, widened to float.
void DecodeNarrowReals(const ColumnRecord& col,
                       const ColumnTypeInfo& info,
                       std::span<const uint8_t> bytes,
                       uint32_t n,
                       uint8_t* dst) {
  auto type = static_cast<ColumnType>(col.type);
  if (type == ColumnType::kReal16 || type == ColumnType::kSplitReal16) {
    ByteVector halves;
    const uint8_t* src = bytes.data();
    if (info.split_width != 0) {
      halves.resize(size_t{n} * 2);
      UnsplitInto<2>(src, n, halves.data());
      src = halves.data();
    }
    for (size_t i = 0; i < n; ++i) {
      StoreLE<float>(dst + i * 4, HalfToFloat(LoadLE<uint16_t>(src + i * 2)));
    }
    return;
  }
  const double steps = std::ldexp(1.0, col.bits) - 1;
  for (size_t i = 0; i < n; ++i) {
    uint32_t item = PackedItem(bytes, i, col.bits);
    float v = type == ColumnType::kReal32Trunc
                  ? std::bit_cast<float>(item << (32 - col.bits))
                  : static_cast<float>(col.min + item * ((col.max - col.min) / steps));
    StoreLE<float>(dst + i * 4, v);
  }
}

}  // namespace

size_t NativeElementSize(const ColumnRecord& column) {
  const ColumnTypeInfo* info = FindColumnType(column.type);
  if (info == nullptr || info->kind == ElementKind::kSwitch) {
    return 0;
  }
  if (info->kind == ElementKind::kIndex) {
    return 8;
  }
  if (info->kind == ElementKind::kReal) {
    return column.bits == 64 ? 8 : 4;
  }
  return column.bits <= 8 ? 1 : column.bits / 8;
}

Result<std::span<const uint8_t>> UnpackPage(std::span<const uint8_t> stored,
                                            const PageInfo& page,
                                            const ColumnRecord& column,
                                            std::string_view what,
                                            ByteVector* scratch) {
  const size_t checksum = page.has_checksum ? kPageChecksumSize : 0;
  if (page.elements > kMaxPageElements) {
    return UnsupportedError(std::string(what) + ": page of " + std::to_string(page.elements)
                            + " elements, more than the " + std::to_string(kMaxPageElements)
                            + " this reader decodes at once");
  }
  if (stored.size() != page.locator.size + checksum) {
    return CorruptionError(std::string(what) + ": " + std::to_string(stored.size())
                           + " stored bytes for a page of " + std::to_string(page.locator.size));
  }
  auto data = stored.first(static_cast<size_t>(page.locator.size));
  if (page.has_checksum && LoadLE<uint64_t>(data.data() + data.size()) != hash::Xxh3(data)) {
    return CorruptionError(std::string(what) + ": page checksum mismatch");
  }
  const uint64_t length = PageLength(page.elements, column.bits);
  if (data.size() == length) {
    return data;  // stored raw
  }
  FERRY_TRY(Unzip(data, length, what, scratch));
  return std::span<const uint8_t>(*scratch);
}

Status DecodePageNative(const ColumnRecord& column,
                        std::span<const uint8_t> bytes,
                        uint32_t elements,
                        std::string_view what,
                        ByteVector* out) {
  FERRY_TRY(CheckColumnRecord(column, what));
  const size_t width = NativeElementSize(column);
  if (width == 0) {
    return UnsupportedError(std::string(what) + ": "
                            + std::string(FindColumnType(column.type)->name)
                            + " columns are not read in bulk");
  }
  if (bytes.size() < PageLength(elements, column.bits)) {
    return CorruptionError(std::string(what) + ": page of " + std::to_string(bytes.size())
                           + " bytes cannot hold " + std::to_string(elements) + " elements");
  }
  if (elements == 0) {
    return OkStatus();  // nothing to append (and an empty buffer has no data pointer)
  }
  const ColumnTypeInfo& info = *FindColumnType(column.type);
  const size_t at = out->size();
  out->resize(at + size_t{elements} * width);
  uint8_t* dst = out->data() + at;
  if (info.kind == ElementKind::kIndex) {
    DecodeIndex(info, bytes, elements, column.bits, dst);
  } else if (IsConvertedReal(static_cast<ColumnType>(column.type))) {
    DecodeNarrowReals(column, info, bytes, elements, dst);
  } else if (column.bits == 1) {
    UnpackBits(bytes.data(), elements, dst);
  } else if (width == 1) {
    std::memcpy(dst, bytes.data(), elements);
  } else {
    CopyElements(bytes.data(), elements, width, info.split_width != 0, dst);
  }
  if (info.zigzag) {
    width == 2   ? UnzigzagInPlace<uint16_t>(dst, elements)
    : width == 4 ? UnzigzagInPlace<uint32_t>(dst, elements)
                 : UnzigzagInPlace<uint64_t>(dst, elements);
  }
  return OkStatus();
}

}  // namespace ferry::rootio
