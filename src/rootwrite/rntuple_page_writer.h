// Writing RNTuple pages: encoding a page's elements into a column type's on-disk form, then
// compressing it and appending the XXH3-64 of the stored bytes, as ROOT does by default.
//
// Input elements are native little-endian values of the column's in-memory width (one byte
// per bool). Encodings (docs/format/rntuple.md "Pages and column types"): Bit packs LSB
// first; Split* store all first bytes, then all second bytes...; SplitInt* zigzag each value
// first, SplitIndex* store the first value and then differences. All of it within the page,
// which is what lets a reader decode any page alone.
#pragma once

#include <cstdint>
#include <span>

#include "base/byte_vector.h"
#include "base/result.h"
#include "codec/compression.h"
#include "rootio/rntuple_column_type.h"

namespace ferry::rootwrite {

// Bytes one element takes in memory before encoding (1 for Bit). 0 for the column types
// this writer does not produce (Switch, Real16, Real32Trunc, Real32Quant, Index32...).
size_t NativeElementSize(rootio::ColumnType type);

// Replaces out with the encoded page of count elements held in native (count *
// NativeElementSize bytes).
void EncodePage(rootio::ColumnType type,
                std::span<const uint8_t> native,
                size_t count,
                ByteVector* out);

// Replaces out with the stored page: the encoded bytes compressed with setting (kept raw when
// that is not smaller, so that stored size == length marks a raw page), followed by 8 bytes of
// XXH3-64 of those stored bytes when checksum is set. scratch is reused between calls.
Status SealPage(const codec::Setting& setting,
                std::span<const uint8_t> encoded,
                bool checksum,
                ByteVector* scratch,
                ByteVector* out);

inline constexpr size_t kPageChecksumSize = 8;

}  // namespace ferry::rootwrite
