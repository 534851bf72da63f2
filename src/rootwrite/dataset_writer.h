// DatasetWriter: one writing interface for an event dataset in a ROOT file, whatever its format
// — a flat TTree (TreeWriter) or an RNTuple laid out as ROOT's RNTupleImporter converts such a
// tree (RntupleWriter). The two take the same branch declarations and column batches (the
// reader's rootio::Column layout); a caller names the format once, as a DatasetFormat value,
// and writes through this header only (rootio/dataset.h is the reading side).
//
//   auto out = DatasetWriter::Make(file, {.format = f, .name = "Events", .title = "..."});
//   out->AddBranch(spec) ... out->WriteColumns(batch) ... out->Close(); file.Close();
//
// Lifetime: the writer borrows the FileWriter, which must outlive it and be closed after its
// Close(). Errors are sticky, as the writers' own. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "rootio/column.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/rntuple_writer.h"
#include "rootwrite/tree_writer.h"

namespace ferry::rootwrite {

enum class DatasetFormat : uint8_t { kTree, kRntuple };

std::string_view DatasetFormatName(DatasetFormat format);  // "ttree", "rntuple"
// InvalidArgument for any other name.
Result<DatasetFormat> ParseDatasetFormat(std::string_view name);

struct DatasetWriterOptions {
  DatasetFormat format = DatasetFormat::kTree;
  std::string name = "Events";
  std::string title;  // a TTree's title, an RNTuple's description
  // A TTree's baskets and clusters (TreeOptions); an RNTuple ignores them.
  int32_t basket_size = TreeOptions{}.basket_size;
  int64_t auto_flush = TreeOptions{}.auto_flush;
  bool background_compression = false;
  // An RNTuple's clusters (RntupleOptions); a TTree ignores it.
  uint64_t zipped_cluster_bytes = RntupleOptions{}.zipped_cluster_bytes;
};

class DatasetWriter {
 public:
  static std::unique_ptr<DatasetWriter> Make(FileWriter& file, const DatasetWriterOptions& options);

  virtual ~DatasetWriter() = default;
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  // Declares a branch (before the first entry): counters before the branches they count.
  virtual Status AddBranch(const BranchSpec& spec) = 0;
  // A batch of entries: columns[i] holds branch i's values for the same number of entries.
  virtual Status WriteColumns(std::span<const rootio::Column* const> columns) = 0;
  // Writes the last cluster and the dataset's records.
  virtual Status Close() = 0;

  // Entries of the first cluster (0 before one is decided).
  virtual int64_t cluster_size() const = 0;
  // Stored and uncompressed bytes of the baskets (pages) written so far; exact after Close().
  virtual int64_t zip_bytes() const = 0;
  virtual int64_t tot_bytes() const = 0;

 protected:
  DatasetWriter() = default;
};

}  // namespace ferry::rootwrite
