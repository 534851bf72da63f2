#include "rootwrite/rntuple_page_writer.h"

#include <cstring>

#include "base/byte_plane.h"
#include "base/endian.h"
#include "base/hash.h"

namespace ferry::rootwrite {
namespace {

using rootio::ColumnType;

void PackBits(std::span<const uint8_t> bools, size_t count, uint8_t* out) {
  std::memset(out, 0, (count + 7) / 8);
  for (size_t i = 0; i < count; ++i) {
    out[i / 8] |= static_cast<uint8_t>((bools[i] != 0 ? 1 : 0) << (i % 8));
  }
}

// Zigzag over a w-byte two's complement value held sign-extended: the result fits w bytes.
uint64_t Zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

uint64_t LoadUnsigned(const uint8_t* p, size_t width) {
  switch (width) {
    case 2:
      return LoadLE<uint16_t>(p);
    case 4:
      return LoadLE<uint32_t>(p);
    default:
      return LoadLE<uint64_t>(p);
  }
}

// Sign-extends a w-byte two's complement value.
int64_t LoadSigned(const uint8_t* p, size_t width) {
  const unsigned shift = 64 - 8 * static_cast<unsigned>(width);
  return static_cast<int64_t>(LoadUnsigned(p, width) << shift) >> shift;
}

// The zigzag or delta transform of a split encoding, element by element, into out (w bytes
// each, little-endian; the high bytes of a wrapped-around difference are dropped, which the
// reader's addition modulo 2^(8w) undoes).
void Transform(const rootio::ColumnTypeInfo& info,
               std::span<const uint8_t> native,
               size_t count,
               uint8_t* out) {
  const size_t w = info.split_width;
  uint64_t previous = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* p = native.data() + i * w;
    uint64_t v = 0;
    if (info.zigzag) {
      v = Zigzag(LoadSigned(p, w));
    } else {
      v = LoadUnsigned(p, w) - previous;
      previous = LoadUnsigned(p, w);
    }
    for (size_t b = 0; b < w; ++b) {
      out[i * w + b] = static_cast<uint8_t>(v >> (8 * b));
    }
  }
}

}  // namespace

size_t NativeElementSize(ColumnType type) {
  switch (type) {
    case ColumnType::kBit:
    case ColumnType::kByte:
    case ColumnType::kChar:
    case ColumnType::kInt8:
    case ColumnType::kUInt8:
      return 1;
    case ColumnType::kInt16:
    case ColumnType::kUInt16:
    case ColumnType::kSplitInt16:
    case ColumnType::kSplitUInt16:
      return 2;
    case ColumnType::kInt32:
    case ColumnType::kUInt32:
    case ColumnType::kReal32:
    case ColumnType::kSplitInt32:
    case ColumnType::kSplitUInt32:
    case ColumnType::kSplitReal32:
      return 4;
    case ColumnType::kInt64:
    case ColumnType::kUInt64:
    case ColumnType::kReal64:
    case ColumnType::kIndex64:
    case ColumnType::kSplitInt64:
    case ColumnType::kSplitUInt64:
    case ColumnType::kSplitReal64:
    case ColumnType::kSplitIndex64:
      return 8;
    default:
      return 0;
  }
}

void EncodePage(ColumnType type, std::span<const uint8_t> native, size_t count, ByteVector* out) {
  const rootio::ColumnTypeInfo& info = *rootio::FindColumnType(static_cast<uint16_t>(type));
  if (type == ColumnType::kBit) {
    out->resize((count + 7) / 8);
    PackBits(native, count, out->data());
    return;
  }
  const size_t bytes = count * NativeElementSize(type);
  out->resize(bytes);
  if (info.split_width == 0) {
    std::memcpy(out->data(), native.data(), bytes);  // little-endian on disk and in memory
    return;
  }
  if (!info.zigzag && !info.delta) {
    SplitBytes(native.data(), count, info.split_width, out->data());
    return;
  }
  ByteVector transformed(bytes);
  Transform(info, native, count, transformed.data());
  SplitBytes(transformed.data(), count, info.split_width, out->data());
}

Status SealPage(const codec::Setting& setting,
                std::span<const uint8_t> encoded,
                bool checksum,
                ByteVector* scratch,
                ByteVector* out) {
  scratch->resize(0);  // CompressPayload appends
  bool packed = FERRY_TRY(codec::CompressPayload(setting, encoded, scratch));
  std::span<const uint8_t> stored = packed ? std::span<const uint8_t>(*scratch) : encoded;
  out->resize(stored.size() + (checksum ? kPageChecksumSize : 0));
  std::memcpy(out->data(), stored.data(), stored.size());
  if (checksum) {
    StoreLE<uint64_t>(out->data() + stored.size(), hash::Xxh3(stored));
  }
  return OkStatus();
}

}  // namespace ferry::rootwrite
