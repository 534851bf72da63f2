// Dataset: one reading interface for the event dataset of a ROOT file, whatever its format — a
// TTree or an RNTuple. Dataset::Open checks the key's class once (the only place outside the
// format readers that knows there are two), and everything else reads through this header:
//
//   entries, clusters ........ entries(), Clusters()
//   fields ................... Fields() (the flat fields and why others are not), FindField(),
//                              Shape(): type, jagged or not, values per entry
//   a field into a column .... ReadInto(): any entry range, only the units that hold it
//   cluster-wise reads ....... ReadClusters(): a ClusterReader over a set of fields, which plans
//                              read units (clusters), fetches a unit's stored bytes in vector
//                              reads (Fetch) and decodes them into columns (Decode), so a
//                              caller schedules its own I/O and CPU
//   stored bytes ............. SurveyStorage(): what reading each field costs
//
// A field is, in a TTree, a single-leaf branch (its id a leaf index, so a leaf name finds it
// too); in an RNTuple, a flat top-level field as rootio/rntuple_columns.h describes (its id an
// index into the dataset's flat fields). Both give columns of the same shapes (rootio/column.h):
// jagged fields with offsets, counters and cardinalities as unsigned counts.
//
// The format readers behind it: tree.h + tree_cluster_reader.h, rntuple.h + rntuple_columns.h
// + rntuple_cluster_reader.h. Code outside rootio that reads events should include only this
// header (tools that print one format's own structure, such as `ferry root ls`, are the
// exception).
//
// Lifetime: a Dataset owns its RootFile (and so the ByteSource); a ClusterReader borrows the
// Dataset, which must outlive it. Thread-safety: every const member may run concurrently, each
// thread with its own DatasetScratch, buffers and columns.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "rootio/column.h"
#include "rootio/root_file.h"

namespace ferry::rootio {

// A reading thread's buffers (decompressed units, decoded offsets), reused across reads; each
// format reader keeps its own part. Not thread-safe: one per thread.
class DatasetScratch {
 public:
  struct Parts;  // rootio/dataset_impl.h, for the format readers
  DatasetScratch();
  ~DatasetScratch();
  DatasetScratch(DatasetScratch&&) noexcept;
  DatasetScratch& operator=(DatasetScratch&&) noexcept;
  DatasetScratch(const DatasetScratch&) = delete;
  DatasetScratch& operator=(const DatasetScratch&) = delete;

  Parts& parts() { return *parts_; }

 private:
  std::unique_ptr<Parts> parts_;
};

// What one entry of a field holds.
struct FieldShape {
  LeafType type = LeafType::kUnknown;
  bool jagged = false;  // a variable number of values per entry (offsets)
  uint32_t len = 1;     // values per entry (per element of a jagged field); strings: 1
};

// One top-level field, readable as a column or not.
struct FieldInfo {
  std::string name;
  int32_t id = -1;  // for ReadInto and Shape; -1 when it cannot be read as a column
  // Why not (id < 0), and whether because it holds several values of different leaves per
  // entry (a TTree's leaf-list branch).
  std::string unreadable;
  bool leaf_list = false;
  FieldShape shape;
  // A jagged field's counter (a TTree's count leaf, an RNTuple's cardinality field over the
  // same collection) as an index into Fields(); -1 when no readable field counts it.
  int32_t counter = -1;
  std::string title;  // the branch title or field description
  // A TTree's branch inside another branch, or one holding others: a part of an object rather
  // than a flat field of its own (an RNTuple's fields, all top-level, are neither).
  bool sub_branch = false;
  bool has_sub_branches = false;
};

// What reading the fields costs: the stored bytes of each storage unit (a TTree's branch, an
// RNTuple's physical column) over the whole file, and per top-level field the units it reads
// (an RVec: its collection's offsets and its values; a column several fields read counts once
// when they are summed over a set).
struct StorageSurvey {
  std::vector<std::string> fields;
  std::vector<std::vector<bool>> uses;  // per field, per storage unit
  std::vector<uint64_t> unit_bytes;
};

struct ClusterReaderOptions {
  uint32_t max_ranges_per_read = 1024;  // ranges per ByteSource::ReadV (XRootD's limit)
};

// Reads a set of fields the way ROOT's TTreeCache does: per read unit (a cluster; a TTree's
// clusters merged where a basket of a read branch crosses one), one fetch of every stored unit
// the fields need, each fetched once, then a decode into one column per field. Fetch and
// Decode are const and may run concurrently on distinct units or buffers.
class ClusterReader {
 public:
  virtual ~ClusterReader() = default;

  virtual size_t unit_count() const = 0;
  virtual EntryRange UnitEntries(size_t unit) const = 0;
  // Stored bytes all units fetch.
  virtual uint64_t bytes() const = 0;
  // The index of a field's column in Decode's output, or -1 (a TTree reader adds the counter
  // leaves of jagged leaves after the requested fields).
  virtual int ColumnOf(std::string_view name) const = 0;

  // Reads the unit's stored bytes into *buffer (resized).
  virtual Status Fetch(size_t unit, ByteVector* buffer) const = 0;
  // Decodes a unit from the buffer Fetch filled into *columns (resized; existing columns are
  // reused), each covering exactly the unit's entries.
  virtual Status Decode(size_t unit,
                        std::span<const uint8_t> buffer,
                        DatasetScratch* scratch,
                        std::vector<Column>* columns) const = 0;

 protected:
  ClusterReader() = default;
  ClusterReader(const ClusterReader&) = default;
  ClusterReader(ClusterReader&&) = default;
  ClusterReader& operator=(const ClusterReader&) = default;
  ClusterReader& operator=(ClusterReader&&) = default;
};

class Dataset {
 public:
  // The dataset `name` of an opened file: an RNTuple when the key's class is ROOT::RNTuple, a
  // TTree otherwise. NotFound when the file has no such key.
  static Result<std::unique_ptr<Dataset>> Open(std::unique_ptr<RootFile> file,
                                               std::string_view name);
  static Result<std::unique_ptr<Dataset>> OpenPath(const std::string& path, std::string_view name);

  virtual ~Dataset() = default;
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  const RootFile& file() const { return *file_; }
  io::ByteSource& source() const { return file_->source(); }

  virtual int64_t entries() const = 0;
  virtual std::string_view title() const = 0;
  // Entry ranges of the clusters, in order, covering every entry.
  virtual std::vector<EntryRange> Clusters() const = 0;

  // The top-level fields, in the file's order (a TTree's branches in branch order, sub-branches
  // included; an RNTuple's flat fields and those it cannot read flat, without the collections
  // only projections read).
  virtual const std::vector<FieldInfo>& Fields() const = 0;
  // The id of a field (or of a TTree leaf) by name; -1 when absent.
  virtual int32_t FindField(std::string_view name) const = 0;
  virtual FieldShape Shape(int32_t id) const = 0;

  // The field's values for entries [range.begin, range.end) into *out (buffers reused). On
  // error *out is unspecified.
  virtual Status ReadInto(int32_t id,
                          EntryRange range,
                          Column* out,
                          DatasetScratch* scratch) const = 0;

  // A reader of these fields (names as FindField takes them). NotFound / Unsupported when one
  // is missing or cannot be read as a column.
  virtual Result<std::unique_ptr<ClusterReader>> ReadClusters(
      std::span<const std::string> fields, const ClusterReaderOptions& options = {}) const = 0;

  virtual Result<StorageSurvey> SurveyStorage() const = 0;

 protected:
  explicit Dataset(std::unique_ptr<RootFile> file) : file_(std::move(file)) {}

 private:
  std::unique_ptr<RootFile> file_;
};

}  // namespace ferry::rootio
