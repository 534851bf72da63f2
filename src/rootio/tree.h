// Tree: reads the values of a flat TTree's leaves, basket by basket.
//
// A Tree borrows the ByteSource of the RootFile that opened it; the source must outlive the
// Tree. Reading methods are const and use per-call scratch, so several threads may read
// different leaves of one Tree at once (the ByteSource is thread-safe).
//
// For callers that plan their own I/O (e.g. one vector read per cluster, as ROOT's TTreeCache
// does), BasketsOverlapping + BasketDecoder + AppendFromBasket decode already-fetched records.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "io/byte_source.h"
#include "rootio/basket.h"
#include "rootio/column.h"
#include "rootio/tree_model.h"

namespace ferry::rootio {

class Tree {
 public:
  Tree(io::ByteSource& source, TreeInfo info) : source_(&source), info_(std::move(info)) {}

  const TreeInfo& info() const { return info_; }
  int64_t entries() const { return info_.entries; }
  io::ByteSource& source() const { return *source_; }

  // All entries.
  EntryRange All() const { return {0, info_.entries}; }

  // Values of one leaf for the entries in range. Errors name the branch and basket.
  Result<Column> ReadLeaf(int32_t leaf, EntryRange range) const;
  // By leaf name, or by the name of a single-leaf branch.
  Result<Column> ReadLeaf(std::string_view name, EntryRange range) const;
  // As ReadLeaf, into *out, whose buffers are reused (a loop over clusters or leaves then
  // allocates, and first-touches fresh memory, only when a column outgrows the last one).
  // decoder: the caller's, reused likewise (may be null). On error *out is unspecified.
  Status ReadLeafInto(int32_t leaf,
                      EntryRange range,
                      Column* out,
                      BasketDecoder* decoder = nullptr) const;

  // Indices of the baskets of a branch that hold entries of range.
  std::vector<size_t> BasketsOverlapping(int32_t branch, EntryRange range) const;
  // The stored record of basket i (key header + stored payload); Corruption for embedded ones.
  Result<std::vector<uint8_t>> ReadBasketRecord(int32_t branch, size_t basket) const;
  // Reads and decodes basket i (disk or embedded) with the caller's decoder.
  Result<BasketView> ReadBasket(int32_t branch, size_t basket, BasketDecoder* decoder) const;

  // Appends the values of leaf for entries of want that lie in the basket to out (which must
  // have been started by StartColumn). counts: the counter leaf's values for exactly this
  // basket's entries, required only for jagged baskets stored without entry offsets.
  Status AppendFromBasket(int32_t leaf,
                          const BasketView& view,
                          const BasketRef& ref,
                          EntryRange want,
                          const Column* counts,
                          Column* out) const;
  // An empty column of the right shape for leaf, starting at entry first.
  Column StartColumn(int32_t leaf, int64_t first) const;
  // Makes *col that empty column, keeping its buffers' capacity.
  void StartColumn(int32_t leaf, int64_t first, Column* col) const;
  // OK when the leaf can be read (supported branch and type).
  Status CheckReadable(int32_t leaf) const;

 private:
  io::ByteSource* source_;
  TreeInfo info_;
};

}  // namespace ferry::rootio
