#include "rootio/rntuple_page.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "base/byte_plane.h"
#include "base/endian.h"
#include "base/hash.h"
#include "codec/compression.h"
#include "rootio/rntuple_bits.h"
#include "rootio/rntuple_blob.h"

namespace ferry::rootio {
namespace {

// Undoes a byte split: element i's byte b is at b * n + i.
ByteVector Unsplit(std::span<const uint8_t> bytes, uint32_t n, size_t width) {
  ByteVector out(size_t{n} * width);
  UnsplitBytes(bytes.data(), n, width, out.data());
  return out;
}

template <class T>
void AppendInts(std::span<const uint8_t> bytes, uint32_t n, std::vector<int64_t>* out) {
  for (uint32_t i = 0; i < n; ++i) {
    out->push_back(static_cast<int64_t>(LoadLE<T>(bytes.data() + size_t{i} * sizeof(T))));
  }
}

void DecodeInts(const ColumnRecord& col,
                const ColumnTypeInfo& info,
                std::span<const uint8_t> bytes,
                uint32_t n,
                ColumnValues* out) {
  // Zigzag values are read zero-extended: undoing the zigzag then yields the signed value.
  bool is_signed = info.kind == ElementKind::kSigned && !info.zigzag;
  switch (col.bits) {
    case 1:
      for (uint32_t i = 0; i < n; ++i) {
        out->ints.push_back((bytes[i / 8] >> (i % 8)) & 1);
      }
      break;
    case 8:
      is_signed ? AppendInts<int8_t>(bytes, n, &out->ints)
                : AppendInts<uint8_t>(bytes, n, &out->ints);
      break;
    case 16:
      is_signed ? AppendInts<int16_t>(bytes, n, &out->ints)
                : AppendInts<uint16_t>(bytes, n, &out->ints);
      break;
    case 32:
      is_signed ? AppendInts<int32_t>(bytes, n, &out->ints)
                : AppendInts<uint32_t>(bytes, n, &out->ints);
      break;
    default:
      AppendInts<uint64_t>(bytes, n, &out->ints);
      break;
  }
}

void Unzigzag(std::span<int64_t> v) {
  for (int64_t& x : v) {
    auto u = static_cast<uint64_t>(x);
    x = static_cast<int64_t>((u >> 1) ^ (0 - (u & 1)));
  }
}

void DecodeReals(const ColumnRecord& col,
                 ColumnType type,
                 std::span<const uint8_t> bytes,
                 uint32_t n,
                 ColumnValues* out) {
  for (uint32_t i = 0; i < n; ++i) {
    double v = 0;
    if (type == ColumnType::kReal32Trunc) {
      v = std::bit_cast<float>(PackedItem(bytes, i, col.bits) << (32 - col.bits));
    } else if (type == ColumnType::kReal32Quant) {
      double steps = std::ldexp(1.0, col.bits) - 1;
      v = col.min + PackedItem(bytes, i, col.bits) * ((col.max - col.min) / steps);
    } else if (col.bits == 16) {
      v = HalfToFloat(LoadLE<uint16_t>(bytes.data() + size_t{i} * 2));
    } else if (col.bits == 32) {
      v = LoadLE<float>(bytes.data() + size_t{i} * 4);
    } else {
      v = LoadLE<double>(bytes.data() + size_t{i} * 8);
    }
    out->reals.push_back(v);
  }
}

void DecodeSwitch(std::span<const uint8_t> bytes, uint32_t n, ColumnValues* out) {
  constexpr size_t kSwitchSize = 12;
  for (uint32_t i = 0; i < n; ++i) {
    const uint8_t* p = bytes.data() + size_t{i} * kSwitchSize;
    out->ints.push_back(static_cast<int64_t>(LoadLE<uint64_t>(p)));
    out->tags.push_back(LoadLE<uint32_t>(p + 8));
  }
}

}  // namespace

uint64_t PageLength(uint64_t elements, uint16_t bits) {
  return (elements * bits + 7) / 8;
}

Status CheckColumnRecord(const ColumnRecord& column, std::string_view what) {
  const ColumnTypeInfo* info = FindColumnType(column.type);
  if (info == nullptr) {
    return UnsupportedError(std::string(what) + ": unknown column type "
                            + std::to_string(column.type));
  }
  if (column.bits < info->min_bits || column.bits > info->max_bits) {
    return CorruptionError(std::string(what) + ": " + std::string(info->name) + " column with "
                           + std::to_string(column.bits) + " bits on storage");
  }
  if (column.type == static_cast<uint16_t>(ColumnType::kReal32Quant)
      && ((column.flags & ColumnFlags::kRange) == 0 || !(column.min <= column.max))) {
    return CorruptionError(std::string(what) + ": Real32Quant column without a valid range");
  }
  return OkStatus();
}

Status ReadPage(io::ByteSource& source,
                const PageInfo& page,
                const ColumnRecord& column,
                uint64_t max_key_size,
                std::string_view what,
                ByteVector* out) {
  if (page.elements > kMaxPageElements) {
    return UnsupportedError(std::string(what) + ": page of " + std::to_string(page.elements)
                            + " elements, more than the " + std::to_string(kMaxPageElements)
                            + " this reader decodes at once");
  }
  if (page.locator.size > source.size()) {
    return CorruptionError(std::string(what) + ": page of " + std::to_string(page.locator.size)
                           + " bytes, more than the file holds");
  }
  uint64_t length = PageLength(page.elements, column.bits);
  // Every compression block has a 9-byte header and expands to at most 0xFFFFFF bytes.
  if (length != page.locator.size
      && length > page.locator.size / codec::kBlockHeaderSize * codec::kMaxBlockSize) {
    return CorruptionError(std::string(what) + ": " + std::to_string(page.locator.size)
                           + " stored bytes cannot expand to " + std::to_string(length));
  }
  uint64_t stored_size = page.stored_bytes();
  ByteVector stored;
  FERRY_TRY(ReadBlob(source, page.locator.offset, stored_size, max_key_size, what, &stored));
  auto data = std::span<const uint8_t>(stored).first(static_cast<size_t>(page.locator.size));
  if (page.has_checksum
      && LoadLE<uint64_t>(stored.data() + page.locator.size) != hash::Xxh3(data)) {
    return CorruptionError(std::string(what) + ": page checksum mismatch");
  }
  return Unzip(data, length, what, out);
}

Status DecodePage(const ColumnRecord& column,
                  std::span<const uint8_t> bytes,
                  uint32_t elements,
                  std::string_view what,
                  ColumnValues* out) {
  FERRY_TRY(CheckColumnRecord(column, what));
  if (bytes.size() < PageLength(elements, column.bits)) {
    return CorruptionError(std::string(what) + ": page of " + std::to_string(bytes.size())
                           + " bytes cannot hold " + std::to_string(elements) + " elements");
  }
  const ColumnTypeInfo& info = *FindColumnType(column.type);
  auto type = static_cast<ColumnType>(column.type);
  ByteVector unsplit;
  if (info.split_width != 0) {
    unsplit = Unsplit(bytes, elements, info.split_width);
    bytes = unsplit;
  }
  if (info.kind == ElementKind::kReal) {
    DecodeReals(column, type, bytes, elements, out);
    return OkStatus();
  }
  if (info.kind == ElementKind::kSwitch) {
    DecodeSwitch(bytes, elements, out);
    return OkStatus();
  }
  size_t first = out->ints.size();
  DecodeInts(column, info, bytes, elements, out);
  std::span<int64_t> page(out->ints.data() + first, elements);
  if (info.zigzag) {
    Unzigzag(page);
  }
  if (info.delta) {
    // Offsets are unsigned on disk; summing them as such wraps instead of overflowing (damaged
    // offsets are caught later, when they run backwards or past their column).
    for (size_t i = 1; i < page.size(); ++i) {
      page[i] =
          static_cast<int64_t>(static_cast<uint64_t>(page[i]) + static_cast<uint64_t>(page[i - 1]));
    }
  }
  return OkStatus();
}

void AppendZeros(const ColumnRecord& column, uint64_t count, ColumnValues* out) {
  const ColumnTypeInfo* info = FindColumnType(column.type);
  if (info != nullptr && info->kind == ElementKind::kReal) {
    out->reals.insert(out->reals.end(), count, 0.0);
    return;
  }
  out->ints.insert(out->ints.end(), count, 0);
  if (info != nullptr && info->kind == ElementKind::kSwitch) {
    out->tags.insert(out->tags.end(), count, 0);
  }
}

}  // namespace ferry::rootio
