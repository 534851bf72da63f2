// ShardBuilder: writes one run's shard in format version 3 (docs/format/store.md sections 4-6),
// with the byte shuffling, compression and verification of its blocks on a TaskPool.
//
// Events arrive in storage order, in ranges of consecutive input rows (Add). The builder copies
// them into per-column staging buffers; a full E block (Kc events, every column) or S block
// (Ks events, the fixed columns and, with J chunks, the jagged ones) becomes a job on the pool:
// shuffle, compress, decompress again and compare (the verification overlapped with writing),
// CRC. Finished jobs are written in submission order by Drain(), which the caller (one thread)
// calls between Adds; an E block's index records are written once its offset is known.
// Finish() writes the directories and the header, fsyncs, and reads every block back to check
// its CRC. Padding slots are never written (file holes).
//
// Memory: the staging of one E block and one S block, plus at most kJobsPerThread jobs per pool
// thread in flight: a new job waits for the oldest one and reuses its buffers (without the
// bound, one 64K-event Add queued 4,096 E jobs, and a 2M-event conversion held 6 GB). Not
// thread-safe: one thread calls Add/Drain/Finish.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "rootio/column.h"
#include "store/dictionary.h"
#include "store/format.h"
#include "store/shard_output.h"
#include "store/task_pool.h"

namespace ferry::store {

struct EventSlot {
  uint32_t lumi_slot = 0;
  uint32_t event_slot = 0;
};

struct ShardBuildStats {
  uint64_t bytes = 0;           // file size
  uint64_t e_blocks = 0;        // E blocks written
  uint64_t s_chunks = 0;        // S (and J) chunks written
  uint64_t raw_bytes = 0;       // payload bytes before compression (E blocks and S chunks)
  uint64_t stored_bytes = 0;    // payload bytes on disk
  uint64_t verified_bytes = 0;  // bytes read back and CRC-checked after the fsync
};

class ShardBuilder {
 public:
  // manifest: version 3 schema, codec, block shape and flags (schema_hash set); it must outlive
  // the builder. plan: the run's lumis and event numbers (from the first pass).
  // dict: the manifest's dictionary, digested (null: E blocks without one).
  static Result<std::unique_ptr<ShardBuilder>> Create(const std::string& path,
                                                      const Manifest& manifest,
                                                      ShardPlan plan,
                                                      TaskPool* pool,
                                                      const Dictionary* dict = nullptr);
  ShardBuilder(const ShardBuilder&) = delete;
  ShardBuilder& operator=(const ShardBuilder&) = delete;
  ~ShardBuilder();

  // Adds rows [row, row + n) of cols (indexed like the schema's columns), the next n events of
  // the run in storage order; slots[i] is row + i's place in the plan.
  Status Add(std::span<const rootio::Column> cols,
             int64_t row,
             size_t n,
             std::span<const EventSlot> slots);
  // Writes the finished jobs at the head of the queue; with wait, every job.
  Status Drain(bool wait);
  // Jobs submitted and not yet written.
  size_t pending() const { return jobs_.size(); }
  Result<ShardBuildStats> Finish();

 private:
  struct Job;
  static constexpr size_t kJobsPerThread = 4;
  ShardBuilder(const Manifest& manifest, ShardPlan plan, ShardOutput out, TaskPool* pool);
  // A finished job's buffers of the same kind, or a new job.
  // A job to fill: a written one's buffers when kJobsPerThread per thread are in flight.
  Result<std::unique_ptr<Job>> TakeJob(bool e_block);
  // Waits for the oldest job, writes it and keeps its buffers for the next one.
  Status WriteFront();
  // The steps of Add: the E blocks of a piece within one S block (records queued, the piece
  // checked, then shuffled straight into a job when it is a whole E block, else staged), and
  // the S staging of the piece.
  Status AddEBlocks(std::span<const rootio::Column> cols,
                    int64_t row,
                    size_t n,
                    std::span<const EventSlot> slots);
  Status QueueRecords(std::span<const EventSlot> slots);
  Status CheckPiece(std::span<const rootio::Column> cols, int64_t row, size_t n);
  Status StageS(std::span<const rootio::Column> cols, int64_t row, size_t n);
  // The bytes of rows [row, row + n) of a column (checked by CheckPiece).
  static std::span<const uint8_t> ValuesOf(const rootio::Column& col,
                                           const ColumnSpec& spec,
                                           int64_t row,
                                           size_t n);
  Status FlushE();
  Status FlushEFrom(std::span<const rootio::Column> cols, int64_t row, size_t n);
  void SubmitE(std::unique_ptr<Job> job);
  Status FlushS();
  Status WriteJob(Job& job);
  Status ReadBack();

  const Manifest& manifest_;
  const Schema& schema_;
  ShardPlan plan_;
  ShardOutput out_;
  TaskPool* pool_;
  const Dictionary* dict_ = nullptr;
  Layout layout_;
  ShardHeader header_;
  uint64_t ks_ = 0;
  uint64_t kc_ = 0;
  bool j_chunks_ = false;

  uint64_t events_ = 0;  // ordinals handed out

  // Open E block: every column's values (unshuffled), group totals, the events' records.
  std::vector<std::vector<uint8_t>> e_bufs_;
  std::vector<uint32_t> e_group_elements_;
  struct PendingRecord {
    uint64_t slot_offset;  // record offset in the file
    uint32_t ordinal;
    uint32_t event_low;
  };
  std::vector<PendingRecord> e_records_;
  uint64_t e_events_ = 0;
  // Open S block: fixed columns (then jagged ones with J chunks), unshuffled.
  std::vector<std::vector<uint8_t>> s_bufs_;
  uint64_t s_events_ = 0;
  std::vector<std::vector<ChunkRef>> s_dir_;  // per S-directory column, per S block
  std::vector<uint8_t> e_table_;

  std::deque<std::unique_ptr<Job>> jobs_;
  std::vector<std::unique_ptr<Job>> free_e_jobs_;
  std::vector<std::unique_ptr<Job>> free_s_jobs_;
  std::vector<uint64_t> piece_elements_;  // per group: elements of the piece CheckPiece checked
  ShardBuildStats stats_;
  bool finished_ = false;
};

}  // namespace ferry::store
