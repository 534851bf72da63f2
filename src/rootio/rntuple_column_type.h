// RNTuple column types: the on-disk element encodings of format 1.0, their names and sizes.
// The numbers are the on-disk ids and must never change. Format: docs/format/rntuple.md
// ("Column types").
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry::rootio {

enum class ColumnType : uint16_t {
  kBit = 0x00,
  kByte = 0x01,
  kChar = 0x02,
  kInt8 = 0x03,
  kUInt8 = 0x04,
  kInt16 = 0x05,
  kUInt16 = 0x06,
  kInt32 = 0x07,
  kUInt32 = 0x08,
  kInt64 = 0x09,
  kUInt64 = 0x0A,
  kReal16 = 0x0B,
  kReal32 = 0x0C,
  kReal64 = 0x0D,
  kIndex32 = 0x0E,
  kIndex64 = 0x0F,
  kSwitch = 0x10,
  kSplitInt16 = 0x11,
  kSplitUInt16 = 0x12,
  kSplitInt32 = 0x13,
  kSplitUInt32 = 0x14,
  kSplitInt64 = 0x15,
  kSplitUInt64 = 0x16,
  kSplitReal16 = 0x17,
  kSplitReal32 = 0x18,
  kSplitReal64 = 0x19,
  kSplitIndex32 = 0x1A,
  kSplitIndex64 = 0x1B,
  kReal32Trunc = 0x1C,
  kReal32Quant = 0x1D,
};

inline constexpr uint16_t kMaxColumnType = 0x1D;

// What a decoded element is.
enum class ElementKind : uint8_t {
  kSigned,    // two's complement integers (and Char, Byte, Bit: see IsBoolLike)
  kUnsigned,  // unsigned integers
  kReal,      // floating point of any width
  kIndex,     // collection offsets (cluster-relative on disk)
  kSwitch,    // (index, tag) pairs
};

struct ColumnTypeInfo {
  std::string_view name;  // "SplitReal32"
  ElementKind kind;
  uint16_t min_bits;  // bits on storage allowed: [min_bits, max_bits]
  uint16_t max_bits;
  uint8_t split_width;  // bytes per element of a byte-split encoding; 0 when not split
  bool delta = false;   // split + delta (SplitIndex*)
  bool zigzag = false;  // split + zigzag (SplitInt*)
};

// nullptr for a type id this reader does not know.
const ColumnTypeInfo* FindColumnType(uint16_t type);

}  // namespace ferry::rootio
