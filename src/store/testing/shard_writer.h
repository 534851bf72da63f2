// ShardWriter: writes one run's shard file in format version 1 or 2 (docs/format/store.md
// section 6) from events added in storage order. Test support only: `ferry store convert` writes
// version 3 (ShardBuilder); this writer lets the tests check that versions 1-2 still read.
//
// The lumi table and event numbers (from the converter's first pass) fix every event's slot
// before any payload is written, so the index region is placed at construction and each
// record is written straight to its closed-form offset once its collection block is on disk.
// Padding slots are never written (file holes). Memory: one S block (Ks events of every fixed
// column) and one C block (Kc events of every jagged column). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "rootio/column.h"
#include "store/format.h"
#include "store/shard_output.h"

namespace ferry::store {

struct ShardWriteStats {
  uint64_t bytes = 0;         // file size
  uint64_t s_chunks = 0;      // S chunks written (fixed columns)
  uint64_t j_chunks = 0;      // J chunks written (collection columns per S block)
  uint64_t c_blocks = 0;      // C blocks written
  uint64_t raw_bytes = 0;     // uncompressed payload bytes
  uint64_t stored_bytes = 0;  // payload bytes on disk
};

class ShardWriter {
 public:
  // manifest: schema, extents, block shape and codec (schema_hash must be set).
  static Result<std::unique_ptr<ShardWriter>> Create(const std::string& path,
                                                     const Manifest& manifest,
                                                     ShardPlan plan);
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;
  ~ShardWriter();

  // Adds the event in row `row` of cols (indexed like the schema's columns). Its slots come
  // from the plan; event is its event number (checked against the plan).
  Status Add(std::span<const rootio::Column> cols,
             int64_t row,
             uint64_t lumi_slot,
             uint64_t event_slot);
  // Flushes the open blocks, writes the directories and the header, fsyncs and closes.
  Result<ShardWriteStats> Finish();

 private:
  ShardWriter(const Manifest& manifest, ShardPlan plan, ShardOutput out);
  Status FlushC();
  Status FlushS();
  Status WriteRecords();
  // Compresses raw into out (stored raw when that is not smaller); returns the stored size.
  Result<uint32_t> Compress(std::span<const uint8_t> raw, ByteVector* out);

  const Manifest& manifest_;
  const Schema& schema_;
  ShardPlan plan_;
  ShardOutput out_;
  Layout layout_;
  ShardHeader header_;
  uint64_t ks_ = 0;
  uint64_t kc_ = 0;

  uint64_t events_ = 0;  // ordinals handed out

  // Open S block: one buffer per fixed column, and per jagged column (its J chunk).
  std::vector<std::vector<uint8_t>> s_bufs_;
  std::vector<std::vector<uint8_t>> j_bufs_;
  uint64_t s_events_ = 0;
  std::vector<std::vector<ChunkRef>> s_dir_;  // per fixed then jagged column, per S block

  // Open C block.
  std::vector<std::vector<uint8_t>> c_bufs_;
  std::vector<uint32_t> c_group_elements_;
  uint32_t c_events_ = 0;
  std::vector<uint8_t> c_table_;
  // Records of the open C block: their slot offsets and bytes (record_size each).
  std::vector<uint64_t> pending_offsets_;
  std::vector<uint8_t> pending_;
  ByteVector scratch_;

  ShardWriteStats stats_;
  bool finished_ = false;
};

}  // namespace ferry::store
