// ShardWriter: writes one run's shard file (docs/format/store.md section 6) from events added
// in storage order.
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
#include "base/fd.h"
#include "base/result.h"
#include "rootio/column.h"
#include "store/format.h"

namespace ferry::store {

// What the first pass decided for one run.
struct ShardPlan {
  uint64_t run = 0;
  uint64_t run_slot = 0;
  std::vector<LumiEntry> lumis;         // ascending; first/count index event_numbers
  std::vector<uint64_t> event_numbers;  // per lumi ascending
};

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
  ShardWriter(const Manifest& manifest, ShardPlan plan, Fd fd, std::string path);
  Status FlushC();
  Status FlushS();
  Status Append(std::span<const uint8_t> bytes);
  Status FlushOut();
  Status WriteRecords();
  // Compresses raw into out (stored raw when that is not smaller); returns the stored size.
  Result<uint32_t> Compress(std::span<const uint8_t> raw, ByteVector* out);

  const Manifest& manifest_;
  const Schema& schema_;
  ShardPlan plan_;
  Fd fd_;
  std::string path_;
  Layout layout_;
  ShardHeader header_;
  uint64_t ks_ = 0;
  uint64_t kc_ = 0;

  uint64_t events_ = 0;       // ordinals handed out
  uint64_t end_ = 0;          // file offset where the next payload byte goes
  std::vector<uint8_t> out_;  // payload bytes not yet written, starting at out_at_
  uint64_t out_at_ = 0;

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

// The end of a shard both writers share: the S directory and the C (E) table appended at *end
// (the payload's end, every payload byte already written), the payload size, section table
// and CRCs set in *h, the file cut at the new *end (padding slots stay holes), the header
// written, fsync.
Status WriteShardTail(int fd,
                      const std::string& path,
                      const std::vector<std::vector<ChunkRef>>& s_dir,
                      std::span<const uint8_t> table,
                      ShardHeader* h,
                      uint64_t* end);

}  // namespace ferry::store
