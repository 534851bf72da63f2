// Rntuple: an RNTuple of a ROOT file, opened for listing and reading values.
//
// Opening reads the anchor, the header and footer envelopes and every cluster group's page
// list (all checksums verified), and checks that the schema hangs together (parents, column
// sizes, alias targets, representations). Field values are then read page by page:
// Read(field, first, count) returns one RntupleValue per entry. A field this reader cannot
// decode (ROOT-streamed objects, column types of a newer format) is an error naming the field
// when it is read; the other fields stay readable.
//
// Thread-safety: const methods other than Read may be called concurrently; Read fills a page
// cache and must not run concurrently with itself. Lifetime: the RootFile (its source) must
// outlive the Rntuple. Format: docs/format/rntuple.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/result.h"
#include "rootio/rntuple_anchor.h"
#include "rootio/rntuple_page.h"
#include "rootio/rntuple_page_list.h"
#include "rootio/rntuple_schema.h"
#include "rootio/rntuple_value.h"
#include "rootio/root_file.h"

namespace ferry::rootio {

class Rntuple {
 public:
  // Opens the RNTuple called name ("dir/name" in a subdirectory).
  static Result<std::unique_ptr<Rntuple>> Open(const RootFile& file, std::string_view name);

  const std::string& name() const { return name_; }
  // The file's bytes (for bulk reads that plan their own I/O, rntuple_columns.h).
  io::ByteSource& source() const { return *source_; }
  const Anchor& anchor() const { return anchor_; }
  const Header& header() const { return header_; }
  const Footer& footer() const { return footer_; }
  uint64_t entries() const { return entries_; }

  // The full schema: the header's records followed by the footer's schema extension. Field
  // and physical column ids index these vectors.
  const std::vector<FieldRecord>& fields() const { return fields_; }
  const std::vector<ColumnRecord>& columns() const { return columns_; }
  // Every cluster of every cluster group, in entry order.
  const std::vector<ClusterInfo>& clusters() const { return clusters_; }
  size_t cluster_groups() const { return groups_; }

  std::vector<uint32_t> TopLevelFields() const;
  const std::vector<uint32_t>& Children(uint32_t field) const { return children_[field]; }
  // Physical column ids of a field (alias columns resolved), grouped by representation:
  // Representation(field, r)[k] is the k-th column of representation r.
  size_t RepresentationCount(uint32_t field) const { return representations_[field].size(); }
  const std::vector<uint32_t>& Representation(uint32_t field, size_t r) const {
    return representations_[field][r];
  }
  // "parent.child" for subfields.
  std::string FieldPath(uint32_t field) const;
  uint32_t TopLevelOf(uint32_t field) const;
  // Whether FieldPath(field) == path (without building the path).
  bool PathIs(uint32_t field, std::string_view path) const;
  // A field by its path ("Muon_pt", "my_struct.a"); NotFound names the path.
  Result<uint32_t> FindField(std::string_view path) const;

  // Values of entries [first, first + count) of a field: for a subfield, each entry's part of
  // its top-level field's value (a member of a record, a list for subfields of collections).
  // InvalidArgument when the range passes entries() or holds more than kMaxValuesPerRead
  // entries (read in batches); Unsupported (naming the field and why) for a field this reader
  // cannot decode, or whose entries hold more than kMaxValuesPerRead values or
  // kMaxElementsPerRead column elements in one call; Corruption for bad pages.
  //
  // The limits bound memory (a value costs ~100 bytes, an element 8) whatever sizes a damaged
  // file claims: offsets, deferred-column starts and array sizes are only numbers on disk.
  static constexpr uint64_t kMaxValuesPerRead = uint64_t{1} << 24;
  static constexpr uint64_t kMaxElementsPerRead = uint64_t{1} << 25;
  Result<std::vector<RntupleValue>> Read(uint32_t field, uint64_t first, uint64_t count) const;

 private:
  friend class RntupleFieldReader;
  Rntuple() = default;

  Status LoadEnvelopes();
  Status LoadPageLists();
  Status BuildSchema();
  Status CheckField(uint32_t id) const;
  Status GroupColumns(uint32_t field, const std::vector<uint32_t>& ids);
  std::string What(std::string_view part) const;

  // The column carrying field column k in cluster c: the non-suppressed representation;
  // nullopt when the cluster lists no such column (it was added after the cluster).
  std::optional<uint32_t> PrimaryColumn(uint32_t field, size_t k, size_t cluster) const;
  // Decoded elements [first, first + count) of a field's k-th column, in whatever
  // representation each cluster uses; deferred elements read as zeros.
  Status ReadElements(
      uint32_t field, size_t k, uint64_t first, uint64_t count, ColumnValues* out) const;
  struct ColumnExtent {
    uint64_t deferred = 0;  // elements [0, deferred) are zeros
    uint64_t end = 0;       // one past the last element that exists
  };
  ColumnExtent Extent(uint32_t field, size_t k) const;
  Status ReadClusterElements(
      uint32_t column, size_t cluster, uint64_t first, uint64_t count, ColumnValues* out) const;
  Result<const ColumnValues*> DecodedPage(uint32_t column, size_t cluster, size_t page) const;
  // The element index at which a field's elements start in a cluster (the base of
  // cluster-relative Index and Switch values pointing into it).
  std::optional<uint64_t> ElementBase(uint32_t field, size_t cluster) const;
  // The base of an Index column's values in a cluster: where the elements it counts start
  // (a string's characters, a collection's items).
  Result<uint64_t> IndexBase(uint32_t field, size_t cluster) const;

  io::ByteSource* source_ = nullptr;
  std::string name_;
  Anchor anchor_;
  Header header_;
  Footer footer_;
  uint64_t header_checksum_ = 0;
  std::vector<FieldRecord> fields_;
  std::vector<ColumnRecord> columns_;
  std::vector<AliasColumn> aliases_;
  std::vector<std::vector<uint32_t>> children_;
  std::vector<std::vector<std::vector<uint32_t>>> representations_;
  // Per top-level field: why it cannot be read (a column type this reader does not know), or "".
  std::vector<std::string> unreadable_;
  std::vector<ClusterInfo> clusters_;
  size_t groups_ = 0;
  uint64_t entries_ = 0;

  // Decoded pages by (column, cluster, page); emptied when it passes kPageCacheBytes.
  static constexpr size_t kPageCacheBytes = size_t{64} << 20;
  mutable std::map<std::tuple<uint32_t, size_t, size_t>, ColumnValues> page_cache_;
  mutable size_t page_cache_bytes_ = 0;
};

// Names of the RNTuples of a file, in directory order ("dir/name" in subdirectories).
Result<std::vector<std::string>> RntupleNames(const RootFile& file);

}  // namespace ferry::rootio
