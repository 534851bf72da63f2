#include "rootio/rntuple_column_type.h"

#include <array>

namespace ferry::rootio {
namespace {

using K = ElementKind;

// Indexed by the on-disk type id.
constexpr std::array<ColumnTypeInfo, kMaxColumnType + 1> kTypes = {{
    {"Bit", K::kUnsigned, 1, 1, 0},
    {"Byte", K::kUnsigned, 8, 8, 0},
    {"Char", K::kSigned, 8, 8, 0},
    {"Int8", K::kSigned, 8, 8, 0},
    {"UInt8", K::kUnsigned, 8, 8, 0},
    {"Int16", K::kSigned, 16, 16, 0},
    {"UInt16", K::kUnsigned, 16, 16, 0},
    {"Int32", K::kSigned, 32, 32, 0},
    {"UInt32", K::kUnsigned, 32, 32, 0},
    {"Int64", K::kSigned, 64, 64, 0},
    {"UInt64", K::kUnsigned, 64, 64, 0},
    {"Real16", K::kReal, 16, 16, 0},
    {"Real32", K::kReal, 32, 32, 0},
    {"Real64", K::kReal, 64, 64, 0},
    {"Index32", K::kIndex, 32, 32, 0},
    {"Index64", K::kIndex, 64, 64, 0},
    {"Switch", K::kSwitch, 96, 96, 0},
    {"SplitInt16", K::kSigned, 16, 16, 2, false, true},
    {"SplitUInt16", K::kUnsigned, 16, 16, 2},
    {"SplitInt32", K::kSigned, 32, 32, 4, false, true},
    {"SplitUInt32", K::kUnsigned, 32, 32, 4},
    {"SplitInt64", K::kSigned, 64, 64, 8, false, true},
    {"SplitUInt64", K::kUnsigned, 64, 64, 8},
    {"SplitReal16", K::kReal, 16, 16, 2},
    {"SplitReal32", K::kReal, 32, 32, 4},
    {"SplitReal64", K::kReal, 64, 64, 8},
    {"SplitIndex32", K::kIndex, 32, 32, 4, true},
    {"SplitIndex64", K::kIndex, 64, 64, 8, true},
    {"Real32Trunc", K::kReal, 10, 31, 0},
    {"Real32Quant", K::kReal, 1, 32, 0},
}};

}  // namespace

const ColumnTypeInfo* FindColumnType(uint16_t type) {
  return type <= kMaxColumnType ? &kTypes[type] : nullptr;
}

}  // namespace ferry::rootio
