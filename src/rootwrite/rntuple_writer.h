// RntupleWriter: writes a flat NanoAOD-like dataset as an RNTuple (binary format 1.0) into a
// FileWriter, streaming.
//
// The schema is declared as branches, exactly as for TreeWriter (scalars and fixed arrays of
// every numeric type and bool, strings, jagged branches counted by an integer counter branch
// declared earlier), and laid out as ROOT's RNTupleImporter lays out such a tree
// (rntuple_model.h): collections as RVec fields with their cardinality fields. Entries arrive
// as column batches in TreeWriter's layout (WriteColumns: one rootio::Column per branch,
// counters included), so one producer can feed either writer.
//
// Each physical column fills a page of options.page_bytes on storage; a full page is encoded,
// compressed and checksummed (rntuple_page_writer.h) and kept with its cluster. A cluster ends
// once its pages reach options.zipped_cluster_bytes compressed (checked every
// options.check_entries entries, estimating the open pages' compressed size from the
// cluster's ratio so far) or options.max_unzipped_cluster_bytes uncompressed; its pages are
// then written column by column into one RBlob key. Memory is therefore one cluster of
// compressed pages plus one open page per column.
//
// The header envelope is written when the first entries arrive. Close() writes the last
// cluster, one page list for the single cluster group, the footer, and the ROOT::RNTuple anchor
// key, lists the anchor in the file's directory and registers its StreamerInfo. The writer
// borrows the FileWriter, which must outlive it and be closed after it. Errors are sticky:
// after one, every call returns it. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "codec/compression.h"
#include "rootio/column.h"
#include "rootio/rntuple_page_list.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/rntuple_model.h"
#include "rootwrite/tree_writer.h"

namespace ferry::rootwrite {

struct RntupleOptions {
  std::string name = "Events";
  std::string description;
  std::optional<codec::Setting> compression;  // default: the file's setting
  // ROOT's RNTupleWriteOptions defaults (BinaryFormatSpecification.md, "Defaults"): clusters
  // of about 128 MiB compressed, at most 1280 MiB uncompressed. Pages of 64 KiB uncompressed:
  // the fApproxUnzippedPageSize of earlier ROOT releases, without their tail-page merging
  // (current ones start pages at 64 elements and grow them to at most 1 MiB).
  uint64_t zipped_cluster_bytes = uint64_t{128} << 20;
  uint64_t max_unzipped_cluster_bytes = uint64_t{1280} << 20;
  size_t page_bytes = size_t{64} << 10;
  bool page_checksums = true;  // ROOT's default
  // Entries between two looks at the cluster's size: a cluster ends within one such step.
  int64_t check_entries = 100;
};

class RntupleWriter {
 public:
  RntupleWriter(FileWriter& file, RntupleOptions options);
  RntupleWriter(const RntupleWriter&) = delete;
  RntupleWriter& operator=(const RntupleWriter&) = delete;
  ~RntupleWriter();

  // Declares a branch (before the first entry). Returns its index; InvalidArgument for a
  // branch the RNTuple layout has no place for (rntuple_model.h), which is then not declared.
  Result<int32_t> AddBranch(const BranchSpec& spec);
  size_t num_branches() const { return specs_.size(); }

  // A batch of entries: columns[i] holds branch i's values for the same number of entries.
  // Jagged columns must agree with their counter columns.
  Status WriteColumns(std::span<const rootio::Column* const> columns);

  // Writes the last cluster, page list, footer and anchor.
  Status Close();

  int64_t entries() const { return entries_; }
  // Entries of the first cluster (0 before one is written).
  int64_t cluster_size() const { return first_cluster_entries_; }
  size_t clusters() const { return clusters_.size(); }
  // Stored bytes of the pages sealed (compressed) and the envelopes written so far, and the
  // pages' uncompressed bytes: progress while a cluster is still in memory.
  int64_t zip_bytes() const { return zip_bytes_; }
  int64_t tot_bytes() const { return tot_bytes_; }

 private:
  struct ColumnSink;

  Error Fail(Error error);
  Status CheckOpen() const;
  Status Freeze();
  Status AppendEntries(std::span<const rootio::Column* const> columns, int64_t a, int64_t b);
  Status Append(ColumnSink& sink, const uint8_t* values, size_t count);
  template <class LengthOf>
  Status AppendOffsets(ColumnSink& sink, size_t a, size_t b, LengthOf length_of);
  Status SealOpenPage(ColumnSink& sink);
  bool ClusterFull() const;
  Status CommitCluster();
  Status Finish();
  Status WriteAnchor(const rootio::EnvelopeLink& footer);
  Result<rootio::EnvelopeLink> WriteEnvelope(const std::vector<uint8_t>& envelope);

  FileWriter* file_;
  RntupleOptions options_;
  codec::Setting setting_;
  std::vector<BranchSpec> specs_;
  RntupleModel model_;
  std::vector<ColumnSink> sinks_;
  std::vector<std::vector<uint64_t>> counts_;  // per counter branch, the current batch
  std::vector<uint64_t> index_scratch_;
  ByteVector encoded_;
  ByteVector compress_scratch_;
  ByteVector sealed_;

  bool frozen_ = false;
  rootio::EnvelopeLink header_link_;
  uint64_t header_checksum_ = 0;
  std::vector<rootio::ClusterInfo> clusters_;
  int64_t entries_ = 0;
  int64_t cluster_first_ = 0;  // first entry of the open cluster
  int64_t first_cluster_entries_ = 0;
  uint64_t cluster_zipped_ = 0;    // sealed pages of the open cluster
  uint64_t cluster_unzipped_ = 0;  // the same pages before compression
  int64_t zip_bytes_ = 0;
  int64_t tot_bytes_ = 0;
  bool closed_ = false;
  std::unique_ptr<Error> failure_;
};

}  // namespace ferry::rootwrite
