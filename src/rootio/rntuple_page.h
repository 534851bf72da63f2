// RNTuple pages: reading one page's bytes (with its optional XXH3-64 checksum), undoing the
// compression, and decoding its elements from any column type of format 1.0.
//
// A page holds `elements` values; its uncompressed size is ceil(elements * bits / 8). Byte-split
// encodings store all first bytes, then all second bytes...; SplitInt* are zigzag-encoded,
// SplitIndex* delta-encoded, both within the page. Bit, Real32Trunc and Real32Quant pack their
// bits LSB first. Format: docs/format/rntuple.md ("Pages", "Column types").
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "io/byte_source.h"
#include "rootio/rntuple_column_type.h"
#include "rootio/rntuple_page_list.h"
#include "rootio/rntuple_schema.h"

namespace ferry::rootio {

// Decoded elements of one column. Integers (Bit, Byte, Char, Int*, UInt*) are in `ints`,
// sign-extended for signed types and zero-extended for unsigned ones; Index columns are in
// `ints` as stored (relative to their cluster); reals are widened to double; a Switch
// element is ints[i] (index, cluster-relative) with tags[i] (0: invalid, k: alternative k).
struct ColumnValues {
  std::vector<int64_t> ints;
  std::vector<double> reals;
  std::vector<uint32_t> tags;

  size_t size() const { return ints.size() + reals.size(); }
};

// The most elements one page may hold here: ROOT writes pages of about 1 MiB (at most 2^23
// Bit elements); a page claiming more could make a few compressed bytes expand to gigabytes.
constexpr uint32_t kMaxPageElements = uint32_t{1} << 25;

// Bytes of `elements` values of a column with `bits` bits each.
uint64_t PageLength(uint64_t elements, uint16_t bits);

// Reads a page's stored bytes, verifies its checksum when it has one, and decompresses it.
// Unsupported for a page of more than kMaxPageElements elements.
Status ReadPage(io::ByteSource& source,
                const PageInfo& page,
                const ColumnRecord& column,
                uint64_t max_key_size,
                std::string_view what,
                ByteVector* out);

// Appends the decoded elements of an uncompressed page to out. Corruption when bytes holds
// fewer than PageLength(elements, column.bits) bytes or the column type is unknown.
Status DecodePage(const ColumnRecord& column,
                  std::span<const uint8_t> bytes,
                  uint32_t elements,
                  std::string_view what,
                  ColumnValues* out);

// Appends `count` zero elements of the column's kind (deferred columns before their start).
void AppendZeros(const ColumnRecord& column, uint64_t count, ColumnValues* out);

// Checks a column record against its type: known type id, bits on storage in range.
Status CheckColumnRecord(const ColumnRecord& column, std::string_view what);

}  // namespace ferry::rootio
