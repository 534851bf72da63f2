#include "rootio/leaf_type.h"

namespace ferry::rootio {

size_t LeafTypeSize(LeafType t) {
  switch (t) {
    case LeafType::kBool:
    case LeafType::kInt8:
    case LeafType::kUInt8:
      return 1;
    case LeafType::kInt16:
    case LeafType::kUInt16:
      return 2;
    case LeafType::kInt32:
    case LeafType::kUInt32:
    case LeafType::kFloat32:
      return 4;
    case LeafType::kInt64:
    case LeafType::kUInt64:
    case LeafType::kFloat64:
      return 8;
    case LeafType::kString:
    case LeafType::kUnknown:
      return 0;
  }
  return 0;
}

namespace {
struct TypeName {
  LeafType type;
  std::string_view name;
};
constexpr TypeName kTypeNames[] = {
    {LeafType::kBool, "Bool_t"},      {LeafType::kInt8, "Char_t"},
    {LeafType::kUInt8, "UChar_t"},    {LeafType::kInt16, "Short_t"},
    {LeafType::kUInt16, "UShort_t"},  {LeafType::kInt32, "Int_t"},
    {LeafType::kUInt32, "UInt_t"},    {LeafType::kInt64, "Long64_t"},
    {LeafType::kUInt64, "ULong64_t"}, {LeafType::kFloat32, "Float_t"},
    {LeafType::kFloat64, "Double_t"}, {LeafType::kString, "string"},
};
}  // namespace

std::string_view LeafTypeName(LeafType t) {
  for (const auto& tn : kTypeNames) {
    if (tn.type == t) {
      return tn.name;
    }
  }
  return "unknown";
}

LeafType LeafTypeFromName(std::string_view name) {
  for (const auto& tn : kTypeNames) {
    if (tn.name == name) {
      return tn.type;
    }
  }
  return LeafType::kUnknown;
}

bool IsIntegerLeafType(LeafType t) {
  switch (t) {
    case LeafType::kInt8:
    case LeafType::kUInt8:
    case LeafType::kInt16:
    case LeafType::kUInt16:
    case LeafType::kInt32:
    case LeafType::kUInt32:
    case LeafType::kInt64:
    case LeafType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool IsSignedLeafType(LeafType t) {
  return t == LeafType::kInt8 || t == LeafType::kInt16 || t == LeafType::kInt32
         || t == LeafType::kInt64;
}

}  // namespace ferry::rootio
