// The bulk page decoder: RNTuple elements into packed native values, for readers that fill
// arrays (the analysis, conversion) rather than RntupleValue trees. Byte-split pages are
// transposed straight into the output (base/byte_plane.h), and zigzag and delta are undone there in
// place, so a page costs one pass over its bytes plus one for the integer transforms; bit columns
// unpack eight at a time from a table.
#include <array>
#include <cstring>
#include <string>

#include "base/byte_plane.h"
#include "base/endian.h"
#include "base/hash.h"
#include "rootio/rntuple_bits.h"
#include "rootio/rntuple_blob.h"
#include "rootio/rntuple_page.h"

namespace ferry::rootio {
namespace {

void CopyElements(const uint8_t* src, size_t n, size_t width, bool split, uint8_t* dst) {
  if (!split) {
    std::memcpy(dst, src, n * width);
    return;
  }
  UnsplitBytes(src, n, width, dst);
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
      UnsplitBytes(src, n, 4, dst + size_t{n} * 4);
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
      UnsplitBytes(src, n, 2, halves.data());
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
