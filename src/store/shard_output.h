// ShardOutput: the file side of writing one shard (docs/format/store.md section 6), shared by
// ShardBuilder (version 3) and the test-only version 1-2 writer.
//
// A shard is written in three places: the head (lumi table and event numbers, right after the
// header's place), the payload (blocks and chunks appended in order through one buffer, so the
// file sees large sequential writes), and the index records, each at its slot's closed-form
// offset once its block's offset is known (RecordRuns coalesces consecutive slots). Finish
// appends the directories, writes the header and fsyncs. Padding slots are never written (file
// holes). Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "store/format.h"

namespace ferry::store {

// What the first pass decided for one run.
struct ShardPlan {
  uint64_t run = 0;
  uint64_t run_slot = 0;
  std::vector<LumiEntry> lumis;         // ascending; first/count index event_numbers
  std::vector<uint64_t> event_numbers;  // per lumi ascending
};

// The plan's fields of a shard header (run, slot, event and lumi counts); the caller sets the
// version, extents, record size, block shape and flags.
void SetPlanFields(const ShardPlan& plan, ShardHeader* h);

// kCorruption naming the run when `events` is not the plan's event count (a writer's Finish).
Status CheckPlanComplete(const ShardPlan& plan, uint64_t events);

// v rounded up to the page size (payloads start page-aligned).
uint64_t AlignToPage(uint64_t v);

class ShardOutput {
 public:
  // Creates (truncates) path.
  static Result<ShardOutput> Create(const std::string& path);

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }

  // Writes the plan's lumi table and event numbers after the header's place and sets their
  // sections and CRCs in *h. Returns the offset just past the event numbers.
  Result<uint64_t> WriteHead(const ShardPlan& plan, ShardHeader* h);
  // The payload starts at the first page boundary at or after index_end; sets its offset in *h.
  void StartPayload(uint64_t index_end, ShardHeader* h);

  // Offset of the next payload byte.
  uint64_t end() const { return end_; }
  // Payload bytes appended so far.
  uint64_t appended() const { return appended_; }
  // Appends payload bytes (buffered; written when the buffer fills or on Flush).
  Status Append(std::span<const uint8_t> bytes);
  Status Flush();

  // Flushes the payload, appends the S directory and the C (E) table at end(), completes *h
  // (payload size, sections, CRCs), cuts the file there (padding slots stay holes), writes the
  // header and fsyncs. end() is then the file size.
  Status WriteTail(const std::vector<std::vector<ChunkRef>>& s_dir,
                   std::span<const uint8_t> table,
                   ShardHeader* h);
  // Closes the file, reporting close(2) errors.
  Status Close();

 private:
  ShardOutput(Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  Fd fd_;
  std::string path_;
  uint64_t end_ = 0;
  uint64_t appended_ = 0;
  std::vector<uint8_t> out_;  // payload bytes not yet written, starting at out_at_
  uint64_t out_at_ = 0;
};

// Index records written at their slot offsets, records of consecutive slots in one write
// (sorted input is one write per block). Add them in ascending offset order, then Flush.
class RecordRuns {
 public:
  explicit RecordRuns(int fd) : fd_(fd) {}
  // Room for a record of `size` bytes at file offset `at`, for the caller to fill; the bytes
  // gathered so far are written first when `at` does not continue them. Valid until the next
  // call.
  Result<std::span<uint8_t>> Next(uint64_t at, size_t size);
  Status Flush();

 private:
  int fd_;
  std::vector<uint8_t> run_;
  uint64_t run_at_ = 0;
};

}  // namespace ferry::store
