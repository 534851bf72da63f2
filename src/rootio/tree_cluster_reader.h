// TreeClusterReader: Dataset's ClusterReader of a TTree (rootio/dataset.h). Reads a set of
// leaves the way ROOT's TTreeCache does — per cluster, one vector read covering the baskets of
// every active branch — and decodes the fetched records itself (BasketDecoder +
// Tree::AppendFromBasket).
//
// Plan (Make): the read units are the tree's clusters (TreeInfo::Clusters), merged where a
// basket of an active branch crosses a cluster boundary, so every basket belongs to exactly
// one unit and is fetched exactly once. Counter leaves of requested jagged leaves are added to
// the active set (they are needed for jagged baskets stored without entry offsets, and they
// are small). Baskets embedded in the TTree record cost no read.
//
// Fetch: one ByteSource::ReadV per unit, split into vector reads of at most
// `max_ranges_per_read` ranges (XRootD's readv limit is 1024 chunks); one range per basket
// record, in branch-major order, into one buffer.
// Decode: the unit's columns, in leaves() order, each covering exactly the unit's entries.
//
// Lifetime: borrows the Tree (and through it the ByteSource); both must outlive the reader.
// Thread-safety: after Make, Fetch and Decode are const and may run concurrently on distinct
// units or buffers, each thread with its own BasketDecoder and columns.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "rootio/basket.h"
#include "rootio/column.h"
#include "rootio/dataset.h"
#include "rootio/tree.h"

namespace ferry::rootio {

// One basket record of a unit: bytes [buffer_offset, buffer_offset + bytes) of the unit's
// buffer hold it (nothing for embedded baskets).
struct BasketSlot {
  int32_t branch = -1;  // index into TreeInfo::branches
  size_t basket = 0;    // index into Branch::baskets
  uint64_t buffer_offset = 0;
  uint32_t bytes = 0;
  bool embedded = false;
};

struct ReadUnit {
  EntryRange entries;
  std::vector<BasketSlot> baskets;  // branch-major (plan branch order), then basket order
  uint64_t bytes = 0;               // stored bytes to fetch
  uint32_t ranges = 0;              // records to fetch (baskets not embedded)
};

class TreeClusterReader final : public ClusterReader {
 public:
  // leaves: leaf names, or names of single-leaf branches. NotFound / Unsupported when one is
  // missing or cannot be read.
  static Result<TreeClusterReader> Make(const Tree& tree,
                                        std::span<const std::string> leaves,
                                        const ClusterReaderOptions& options = {});

  const Tree& tree() const { return *tree_; }
  // Leaf indices in column order: the requested leaves, then the added counter leaves.
  const std::vector<int32_t>& leaves() const { return leaves_; }
  // Column index of a leaf name in leaves(), or -1.
  int ColumnOf(std::string_view leaf_name) const override;
  const std::vector<ReadUnit>& units() const { return units_; }
  size_t unit_count() const override { return units_.size(); }
  EntryRange UnitEntries(size_t unit) const override { return units_[unit].entries; }
  // Stored bytes all units fetch, and the number of records.
  uint64_t bytes() const override { return bytes_; }
  uint64_t ranges() const { return ranges_; }

  // Reads unit i's records into *buffer (resized to units()[i].bytes).
  Status Fetch(size_t unit, ByteVector* buffer) const override;
  // Decodes unit i from a buffer filled by Fetch into *columns (resized to leaves().size();
  // existing columns are reused to avoid reallocations).
  Status Decode(size_t unit,
                std::span<const uint8_t> buffer,
                BasketDecoder* decoder,
                std::vector<Column>* columns) const;
  Status Decode(size_t unit,
                std::span<const uint8_t> buffer,
                DatasetScratch* scratch,
                std::vector<Column>* columns) const override;

 private:
  TreeClusterReader() = default;
  Status Plan();

  const Tree* tree_ = nullptr;
  ClusterReaderOptions options_;
  std::vector<int32_t> leaves_;
  std::vector<int32_t> branches_;  // active branches, those holding counter leaves first
  // Per active branch (same order as branches_): the column indices it fills.
  std::vector<std::vector<size_t>> branch_columns_;
  // Per column: the column of its counter leaf, or -1.
  std::vector<int> counter_column_;
  std::vector<ReadUnit> units_;
  uint64_t bytes_ = 0;
  uint64_t ranges_ = 0;
};

}  // namespace ferry::rootio
