// Bulk reads of an RNTuple's flat fields into rootio::Column, the layout the TTree reader
// fills (rootio/column.h), for code that works on arrays: the analysis, conversion to the
// event store. Pages are decoded straight into packed native values (DecodePageNative), never
// through RntupleValue trees.
//
// A flat field ("leaf") is one of:
//   - a leaf field with one column (a number or bool per entry: fixed_len 1);
//   - a repetitive field around such a leaf (std::array<T,N>: fixed_len N);
//   - a collection (RVec, std::vector; projected ones included) of such a leaf: jagged, the
//     offsets from its Index column;
//   - a std::string: jagged like a TTree's string leaf (LeafType::kString, the characters in
//     `bytes`, one string per entry), the offsets from its Index column, the characters from
//     its Char column.
// The Column's type is the value column's (float for Real16/Real32Trunc/Real32Quant, bool for
// Bit, LeafType of the integer width otherwise), so a double field stored as Real32 reads as
// floats. Fields with several representations or deferred columns, variants, collections of
// strings and nested collections are Unsupported here (Rntuple::Read reads them as values).
//
// The reads are split so a caller can plan its own I/O, as rootio::TreeClusterReader does for
// TTrees: AppendLeafPages lists a cluster's pages, FetchPages reads them in vector reads,
// DecodeLeafCluster decodes them. ReadRntupleLeaf does all three for any entry range.
//
// Thread-safety: all functions are const on the Rntuple and may run concurrently, each caller
// with its own scratch and output. Format: docs/format/rntuple.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "rootio/column.h"
#include "rootio/rntuple.h"

namespace ferry::rootio {

struct RntupleLeaf {
  std::string path;
  uint32_t field = 0;
  LeafType type = LeafType::kUnknown;
  bool jagged = false;
  uint32_t fixed_len = 1;
  // A ROOT::RNTupleCardinality field: the lengths its collection's Index column counts, as
  // unsigned integers of the field's width (what a TTree's counter leaf holds).
  bool cardinality = false;
  uint32_t value_column = 0;  // physical column ids (unused for cardinalities)
  uint32_t index_column = 0;  // jagged leaves and cardinalities
};

// Unsupported (naming the field and why) when the field is not flat as described above;
// NotFound when there is no such field.
Result<RntupleLeaf> ResolveRntupleLeaf(const Rntuple& r, std::string_view path);
// The same for a field id (a valid index of r.fields()).
Result<RntupleLeaf> ResolveRntupleLeaf(const Rntuple& r, uint32_t field);

// The stored bytes of one page (the checksum included) and where a fetch puts them.
struct RntuplePageRef {
  uint32_t column = 0;
  uint32_t page = 0;  // index in the cluster's page list of the column
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t buffer_offset = 0;
};

// Appends the pages of a leaf in a cluster (the Index column's first), placing them in a fetch
// buffer from *buffer_end on (advanced past them). Corruption when the cluster lists no such
// column, or lists it suppressed.
Status AppendLeafPages(const Rntuple& r,
                       const RntupleLeaf& leaf,
                       size_t cluster,
                       std::vector<RntuplePageRef>* pages,
                       uint64_t* buffer_end);

// Reads the pages into *buffer (resized to buffer_size), at most max_ranges pages per vector
// read; a page split across keys (larger than the anchor's max key size) is read on its own.
Status FetchPages(const Rntuple& r,
                  std::span<const RntuplePageRef> pages,
                  uint64_t buffer_size,
                  uint32_t max_ranges,
                  ByteVector* buffer);

struct RntupleScratch {
  ByteVector unpacked;  // a decompressed page
  ByteVector index;     // Index elements
  ByteVector stored;    // ReadRntupleLeaf: a page as read
  ByteVector page;      // ReadRntupleLeaf: a page decoded
  std::vector<uint64_t> offsets;
  // DecodeLeafCluster: each collection's entry offsets (by its Index column) as last decoded,
  // for `cluster`. Every field of the collection shares them (Offsets::Share); a collection
  // decoded again refills its vector in place once the columns that shared it dropped it
  // (Column::offsets.clear()). ForgetOffsets before decoding a buffer with other bytes of a
  // cluster.
  struct CollectionOffsets {
    uint32_t index_column = UINT32_MAX;
    size_t cluster = SIZE_MAX;
    Offsets offsets;
  };
  std::vector<CollectionOffsets> collections;
  CollectionOffsets& OffsetsOf(uint32_t index_column) {
    for (CollectionOffsets& c : collections) {
      if (c.index_column == index_column) {
        return c;
      }
    }
    collections.push_back(CollectionOffsets{index_column, SIZE_MAX, {}});
    return collections.back();
  }
  void ForgetOffsets() {
    for (CollectionOffsets& c : collections) {
      c.cluster = SIZE_MAX;
    }
  }
};

// Decodes a leaf's part of a cluster into *out (its entries: first_entry, num_entries, offsets
// relative to the cluster) from `buffer`, which FetchPages filled from `pages`, the refs
// AppendLeafPages gave for this leaf and cluster. The offsets of a collection come from
// *scratch when it decoded them for this cluster (see RntupleScratch::ForgetOffsets), and are
// shared with the other columns of the collection, not copied. Checksums are verified;
// Corruption when the pages disagree with the cluster's entries (element counts, offsets running
// backwards or past the values).
Status DecodeLeafCluster(const Rntuple& r,
                         const RntupleLeaf& leaf,
                         size_t cluster,
                         std::span<const RntuplePageRef> pages,
                         std::span<const uint8_t> buffer,
                         RntupleScratch* scratch,
                         Column* out);

// The leaf's values for entries [range.begin, range.end) into *out (reused), reading and
// decoding only the pages that hold them (one read per page: for conversion and sampling;
// cluster-wide work plans its reads as above). InvalidArgument when the range passes
// entries().
Status ReadRntupleLeaf(const Rntuple& r,
                       const RntupleLeaf& leaf,
                       EntryRange range,
                       RntupleScratch* scratch,
                       Column* out);

}  // namespace ferry::rootio
