// TreeWriter: writes a flat TTree into a FileWriter, streaming.
//
// Branches (one leaf each, as NanoAOD) are declared first: scalars and fixed-size arrays of
// every numeric type and bool, variable-size arrays counted by an integer counter branch
// declared earlier (NanoAOD's nJet / Jet_pt[nJet]), and strings (TLeafC). Entries then arrive
// one at a time (Set* for every branch, then Fill) or as column batches (WriteColumns, one
// rootio::Column per branch in declaration order, the layout the reader produces).
//
// Each branch fills a basket buffer of TreeOptions::basket_size bytes and writes it as a TBasket
// record when full, so memory is one basket per branch whatever the number of entries.
// Clusters follow ROOT's auto-flush: auto_flush > 0 flushes every branch's basket each
// auto_flush entries; auto_flush < 0 ends the first cluster once -auto_flush compressed bytes
// have been written, then keeps that many entries per cluster (fAutoFlush) and resizes each
// branch's basket to hold one cluster (capped by max_basket_size), as TTree::OptimizeBaskets
// does; auto_flush == 0 never forces a flush.
//
// Close() flushes the last baskets and writes the TTree record (see tree_record.h), lists its
// key in the file's directory and registers the classes it uses for the StreamerInfo record.
// The TreeWriter borrows the FileWriter, which must outlive it and be closed after it. Errors
// are sticky: after one, every call returns it. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/result.h"
#include "codec/compression.h"
#include "rootio/column.h"
#include "rootio/tree_model.h"
#include "rootwrite/basket_writer.h"
#include "rootwrite/file_writer.h"

namespace ferry::rootwrite {

struct BranchSpec {
  std::string name;
  rootio::LeafType type = rootio::LeafType::kUnknown;
  int32_t len = 1;    // values per entry (fixed arrays), or per counter unit (jagged)
  std::string count;  // counter branch of a jagged branch; "" for fixed size
  std::string title;  // branch title; default ROOT's leaf list "Jet_pt[nJet]/F"
};

struct TreeOptions {
  std::string name = "Events";
  std::string title;
  std::optional<codec::Setting> compression;  // default: the file's setting
  int32_t basket_size = 32000;                // ROOT's default initial basket size
  int64_t auto_flush = -30000000;             // ROOT's default: first cluster at 30 MB zipped
  int32_t max_basket_size = 4 << 20;          // cap when baskets are resized to a cluster
  bool optimize_baskets = true;
  // Compress and write baskets on a second thread (BasketPipeline) while entries are
  // serialised; the file is byte-identical. Until Close() the FileWriter belongs to this tree:
  // nothing else may write into it, and file->end() is not current.
  bool background_compression = false;
  size_t max_queued_bytes = 64u << 20;  // uncompressed basket bytes waiting for that thread
};

// LeafType of a C++ value type (kUnknown for unsupported types).
template <class T>
constexpr rootio::LeafType LeafTypeOf() {
  using rootio::LeafType;
  if constexpr (std::is_same_v<T, bool>) {
    return LeafType::kBool;
  } else if constexpr (std::is_same_v<T, int8_t>) {
    return LeafType::kInt8;
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return LeafType::kUInt8;
  } else if constexpr (std::is_same_v<T, int16_t>) {
    return LeafType::kInt16;
  } else if constexpr (std::is_same_v<T, uint16_t>) {
    return LeafType::kUInt16;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return LeafType::kInt32;
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return LeafType::kUInt32;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return LeafType::kInt64;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return LeafType::kUInt64;
  } else if constexpr (std::is_same_v<T, float>) {
    return LeafType::kFloat32;
  } else if constexpr (std::is_same_v<T, double>) {
    return LeafType::kFloat64;
  } else {
    return LeafType::kUnknown;
  }
}

class BasketPipeline;

class TreeWriter {
 public:
  TreeWriter(FileWriter& file, TreeOptions options);
  TreeWriter(const TreeWriter&) = delete;
  TreeWriter& operator=(const TreeWriter&) = delete;
  ~TreeWriter();

  // Declares a branch (before the first entry). Returns its index.
  Result<int32_t> AddBranch(const BranchSpec& spec);
  int32_t FindBranch(std::string_view name) const;
  size_t num_branches() const { return branches_.size(); }
  const BranchSpec& spec(int32_t branch) const { return specs_[static_cast<size_t>(branch)]; }

  // Entry at a time: give every branch its value(s), then Fill. T must match the branch type.
  template <class T>
  void Set(int32_t branch, T value) {
    SetRaw(branch, LeafTypeOf<T>(), &value, 1);
  }
  template <class T>
  void SetArray(int32_t branch, std::span<const T> values) {
    SetRaw(branch, LeafTypeOf<T>(), values.data(), values.size());
  }
  void SetString(int32_t branch, std::string_view value);
  Status Fill();

  // A batch of entries: columns[i] holds branch i's values (native, Column layout) for the
  // same number of entries. Jagged columns must agree with their counter columns.
  Status WriteColumns(std::span<const rootio::Column* const> columns);

  // Flushes, writes the TTree record and registers it with the file.
  Status Close();

  int64_t entries() const { return entries_; }
  // Entries per cluster once decided (0 before).
  int64_t cluster_size() const { return cluster_size_; }
  // Compressed basket bytes written (while a background thread compresses, what it has
  // written so far; exact after Close()).
  int64_t zip_bytes() const;
  int64_t tot_bytes() const;
  // Uncompressed bytes of baskets written since the last call (progress reporting).
  int64_t TakeBytesWritten();

 private:
  struct Staged {
    std::vector<uint8_t> bytes;  // native values
    size_t count = 0;
    std::string text;
    bool set = false;
  };

  void SetRaw(int32_t branch, rootio::LeafType type, const void* values, size_t count);
  Error Fail(Error error);
  Status CheckOpen() const;
  Status WriteFull(size_t branch);
  Status AfterEntries(int64_t n);
  Status FlushAll();
  // zip_total_ = every basket written so far (waits for the background thread).
  Status SyncZipTotal();
  // flushed_bytes_ = the compressed total at this cluster end (set once it is written).
  Status MarkFlushed();
  void OptimizeBaskets();
  Status AppendSegment(std::span<const rootio::Column* const> columns, int64_t a, int64_t b);
  Status CheckColumns(std::span<const rootio::Column* const> columns, int64_t* n);

  FileWriter* file_;
  TreeOptions options_;
  codec::Setting setting_;
  std::vector<BranchSpec> specs_;
  std::vector<BranchBuffer> branches_;
  std::vector<int32_t> count_of_;  // counter branch index per branch, -1 if none
  std::vector<bool> is_counter_;
  std::vector<Staged> staged_;
  std::vector<std::vector<uint64_t>> counter_values_;  // per counter branch, current batch
  std::string pending_error_;
  BasketScratch scratch_;
  int64_t entries_ = 0;
  int64_t cluster_size_ = 0;
  int64_t zip_total_ = 0;
  int64_t flushed_bytes_ = 0;
  int64_t bytes_mark_ = 0;
  bool closed_ = false;
  std::unique_ptr<Error> failure_;
  // Declared last: destroyed first, while the branches its queue points at still exist.
  std::unique_ptr<BasketPipeline> pipeline_;
};

}  // namespace ferry::rootwrite
