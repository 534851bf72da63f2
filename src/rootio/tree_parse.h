// Parses a TTree record (the decompressed payload of a key of class TTree) into a TreeInfo.
// Format: docs/format/root.md ("TTree, TBranch, TLeaf").
//
// Supports TTree class versions 16-20 (ROOT 5.23 to 6.x), TBranch 10-13, TLeaf 2 and the
// typed leaves, TObjArray, baskets embedded in the TTree record, and the fLeafCount references
// that tie a jagged leaf to its counter. Branches of other classes (TBranchElement, ...) are
// listed with supported = false. Every count and size is bounds-checked: corrupt input gives
// Corruption, never a crash or an unbounded allocation.
#pragma once

#include <cstdint>
#include <span>

#include "base/result.h"
#include "rootio/tree_model.h"

namespace ferry::rootio {

Result<TreeInfo> ParseTree(std::span<const uint8_t> payload, uint16_t keylen);

}  // namespace ferry::rootio
