// The state of one Store::Scan (internal to the store library): what it reads, the buffers it
// reuses from block to block, and the column copies it reads and writes (store_scan.cc,
// store_copies.cc).
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "io/byte_source.h"
#include "store/column_copy.h"
#include "store/copies.h"
#include "store/store.h"

namespace ferry::store {

// One requested jagged column within the current shard: a checked copy to read, or the E
// blocks, and a copy being written.
struct CopyColumn {
  size_t q = 0;                            // its position in the scan's columns
  std::unique_ptr<io::ByteSource> source;  // null: the E blocks
  uint32_t id = 0;                         // the copy's id when the manifest names one
  bool failed = false;                     // a chunk failed its check during this scan
  std::string path;
  std::vector<ChunkRef> refs;
  std::optional<CopyWriter> writer;
  BuiltCopy pending;
};

// What a scan reads and where it goes, and the buffers it reuses from block to block.
struct Store::ScanState {
  // Fixed columns to fetch: the requested ones plus the counters of requested jagged ones.
  std::vector<int32_t> fixed;
  // Per requested column: its entry in fixed (itself, or its counter when jagged), and the
  // positions of the jagged ones.
  std::vector<size_t> fixed_of;
  std::vector<size_t> jagged_at;
  std::vector<rootio::Column> fixed_cols;
  ScanBatch batch;
  std::vector<bool> swapped;
  std::vector<size_t> first_at;
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> header_scratch;
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<std::span<const uint8_t>> got;
  std::vector<std::pair<uint64_t, size_t>> ranges;
  std::vector<ChunkRef> refs;
  // The current shard's copies, one per entry of jagged_at, and the columns read from E blocks.
  std::vector<CopyColumn> copies;
  std::vector<size_t> from_blocks;
  std::vector<uint8_t> copy_scratch;

  ScanState(const Schema& s, std::span<const int32_t> columns) {
    for (int32_t c : columns) {
      const ColumnSpec& spec = s.columns[static_cast<size_t>(c)];
      int32_t f = spec.jagged() ? spec.counter : c;
      if (std::find(fixed.begin(), fixed.end(), f) == fixed.end()) {
        fixed.push_back(f);
      }
    }
    fixed_cols.resize(fixed.size());
    batch.columns.resize(columns.size());
    fixed_of.resize(columns.size());
    for (size_t q = 0; q < columns.size(); ++q) {
      const ColumnSpec& spec = s.columns[static_cast<size_t>(columns[q])];
      const int32_t f = spec.jagged() ? spec.counter : columns[q];
      fixed_of[q] = static_cast<size_t>(std::find(fixed.begin(), fixed.end(), f) - fixed.begin());
      if (spec.jagged()) {
        jagged_at.push_back(q);
      }
    }
    swapped.resize(fixed.size());
    first_at.resize(fixed.size());
  }
};

// Copies a scan writes: the writer lock, the next copy id, and the copies finished so far.
struct Store::CopyBuild {
  bool active = false;
  std::string dir;
  Fd lock;
  uint32_t next_id = 0;
  std::vector<BuiltCopy> built;
  std::vector<uint32_t> drop;  // copies found corrupt mid-shard: dropped at publication
  // A failed scan removes what it wrote (files no manifest names).
  void Abandon(ScanState& st);
};

}  // namespace ferry::store
