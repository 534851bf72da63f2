// RntupleClusterReader: Dataset's ClusterReader of an RNTuple (rootio/dataset.h), the
// counterpart of TreeClusterReader — a set of flat fields read
// cluster by cluster, each cluster's pages in one vector read (split at
// `max_ranges_per_read`), decoded straight into Columns (rootio/rntuple_columns.h) of
// the same shapes the TTree reader gives: jagged RVec fields with offsets, scalars with one
// value per entry, cardinality fields as unsigned counts.
//
// Plan (Make): the read units are the RNTuple's clusters. A page several fields share (the
// Index column of a collection, which every RVec projected from it reads) is fetched once.
// Decode: the unit's columns in leaves() order, each covering exactly the unit's entries.
//
// Lifetime: borrows the Rntuple (and through it the file's ByteSource); both must outlive the
// reader. Thread-safety: after Make, Fetch and Decode are const and may run concurrently, each
// thread with its own buffer, scratch and columns.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "rootio/column.h"
#include "rootio/dataset.h"
#include "rootio/rntuple.h"
#include "rootio/rntuple_columns.h"

namespace ferry::rootio {

struct RntupleUnit {
  EntryRange entries;
  size_t cluster = 0;
  // Per leaf, its pages (buffer offsets into the unit's buffer): leaf k's are
  // pages[page_begin[k], page_begin[k + 1]).
  std::vector<RntuplePageRef> pages;
  std::vector<size_t> page_begin;
  std::vector<RntuplePageRef> fetch;  // the distinct pages, in file order
  uint64_t bytes = 0;                 // stored bytes to fetch
};

class RntupleClusterReader final : public ClusterReader {
 public:
  // leaves: top-level field names. NotFound / Unsupported when one is missing or not flat.
  static Result<RntupleClusterReader> Make(const Rntuple& rntuple,
                                           std::span<const std::string> leaves,
                                           const ClusterReaderOptions& options = {});

  const Rntuple& rntuple() const { return *rntuple_; }
  const std::vector<RntupleLeaf>& leaves() const { return leaves_; }
  // Column index of a field name in leaves(), or -1.
  int ColumnOf(std::string_view name) const override;
  const std::vector<RntupleUnit>& units() const { return units_; }
  size_t unit_count() const override { return units_.size(); }
  EntryRange UnitEntries(size_t unit) const override { return units_[unit].entries; }
  uint64_t bytes() const override { return bytes_; }

  // Reads unit i's pages into *buffer (resized to units()[i].bytes).
  Status Fetch(size_t unit, ByteVector* buffer) const override;
  // Decodes unit i from a buffer Fetch filled into *columns (resized to leaves().size(),
  // existing columns reused).
  Status Decode(size_t unit,
                std::span<const uint8_t> buffer,
                RntupleScratch* scratch,
                std::vector<Column>* columns) const;
  Status Decode(size_t unit,
                std::span<const uint8_t> buffer,
                DatasetScratch* scratch,
                std::vector<Column>* columns) const override;

 private:
  RntupleClusterReader() = default;
  Status PlanUnit(size_t cluster);

  const Rntuple* rntuple_ = nullptr;
  ClusterReaderOptions options_;
  std::vector<RntupleLeaf> leaves_;
  std::vector<RntupleUnit> units_;
  uint64_t bytes_ = 0;
};

}  // namespace ferry::rootio
