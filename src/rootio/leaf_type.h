// The types of a column's values and entry ranges: what every format's reader gives and every
// writer takes (rootio/column.h, rootio/dataset.h, rootwrite), named as ROOT names a leaf's type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ferry::rootio {

enum class LeafType : uint8_t {
  kUnknown,
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kFloat32,
  kFloat64,
  kString,  // TLeafC: length-prefixed characters, one string per entry
};

// Bytes of one element (0 for strings and unknown).
size_t LeafTypeSize(LeafType t);
// ROOT type name: "Bool_t", "Char_t", "UChar_t", "Short_t", "UShort_t", "Int_t", "UInt_t",
// "Long64_t", "ULong64_t", "Float_t", "Double_t"; "string" for TLeafC; "unknown".
std::string_view LeafTypeName(LeafType t);
// Inverse of LeafTypeName (kUnknown when not a name above).
LeafType LeafTypeFromName(std::string_view name);
// The 8-64 bit integer types (signed or not; not Bool_t), the types a counter leaf can have.
bool IsIntegerLeafType(LeafType t);
bool IsSignedLeafType(LeafType t);

// Half-open entry range [begin, end).
struct EntryRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  bool operator==(const EntryRange&) const = default;
};

}  // namespace ferry::rootio
