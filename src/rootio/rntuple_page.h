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

// The bulk path (rntuple_page_native.cc): elements decoded straight into packed native values,
// no widening to 64 bits. NativeElementSize gives the bytes per decoded element: 1 for Bit
// (0/1) and the 8-bit types, 2/4/8 for integers of those widths, 4 (float) for Real16,
// Real32Trunc, Real32Quant and Real32, 8 for Real64 and for Index columns (uint64, deltas
// summed); 0 for Switch and unknown types, which this path does not decode.
size_t NativeElementSize(const ColumnRecord& column);

// Verifies the checksum of a page whose stored bytes the caller read (locator size bytes, then
// the XXH3-64 when the page has one) and returns its uncompressed bytes: a view of `stored`
// when the page is stored raw, else *scratch, filled. Corruption names `what`.
Result<std::span<const uint8_t>> UnpackPage(std::span<const uint8_t> stored,
                                            const PageInfo& page,
                                            const ColumnRecord& column,
                                            std::string_view what,
                                            ByteVector* scratch);

// Appends `elements` decoded elements of an uncompressed page to *out, NativeElementSize bytes
// each. Unsupported for Switch columns; Corruption when bytes holds fewer than
// PageLength(elements, column.bits) bytes.
Status DecodePageNative(const ColumnRecord& column,
                        std::span<const uint8_t> bytes,
                        uint32_t elements,
                        std::string_view what,
                        ByteVector* out);

// Checks a column record against its type: known type id, bits on storage in range.
Status CheckColumnRecord(const ColumnRecord& column, std::string_view what);

}  // namespace ferry::rootio
