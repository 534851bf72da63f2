// Sender: moves files and directory trees to a ferry receiver over N parallel TCP streams.
//
// Pipeline (docs/ARCHITECTURE.md, "xfer"):
//   reader thread  -- io_uring reads (O_DIRECT where the filesystem allows, queue depth >= 16)
//                     into a fixed pool of aligned block buffers --> bounded ready queue
//   N stream threads -- each drives one TCP connection: pops the next ready block, hashes it
//                     (XXH3-64), sends it, returns the buffer; a slow stream simply pops less
//   N ack threads  -- read the receiver's per-block ACKs; a NACK (checksum mismatch) or a lost
//                     stream puts the block back on the retry queue, which the reader serves
//                     first by reading the block again (buffers are never held for ACKs)
//   calling thread -- control connection: manifest, resume state, FILE_DONE digests, progress
// Send() blocks until every file is verified, synced and renamed at the receiver, or failed.
// Thread-safety: Send() may run concurrently with other Send() calls (no global state).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "xfer/stage_stats.h"

namespace ferry::xfer {

struct SendProgress {
  uint64_t bytes_done = 0;   // unique file bytes acknowledged (resumed blocks included)
  uint64_t bytes_total = 0;  // all files
  uint64_t sent_bytes = 0;   // payload bytes on the wire (retransmissions included)
  double seconds = 0;
  int live_streams = 0;
  std::vector<uint64_t> stream_bytes;
};

struct SendOptions {
  std::vector<std::string> paths;
  std::string host;
  uint16_t port = 0;
  std::string dest;  // directory under the receiver's root ("" = the root)
  // cp's naming: one regular file arrives as `dest` itself, unless `dest` is an existing
  // directory on the receiver (then as dest/basename). Directories always arrive inside dest.
  bool dest_is_name = false;
  int streams = 0;                 // 0: chosen from RTT, rate and kernel buffer limits
  uint32_t block_size = 4u << 20;  // checksum / re-send unit (reads are 16 MiB or more)
  std::string token;               // shared secret ("" = none)
  bool resume = false;
  uint64_t rate_bps = 10'000'000'000;  // expected bottleneck, for buffer sizing
  uint64_t max_rate_bps = 0;           // pacing cap over all streams (0 = none)
  std::string congestion;              // TCP congestion control of every connection ("": system's)
  unsigned queue_depth = 16;           // reads in flight
  unsigned buffers = 0;                // block buffers (0: queue_depth + 2 x streams)
  bool direct_io = true;
  bool use_uring = true;
  int timeout_ms = 30000;                                // connect, handshake and stall limit
  std::function<void(const SendProgress&)> on_progress;  // ~5/s, calling thread
  std::function<void(std::string_view)> on_notice;       // warnings/notes, calling thread
};

struct FileResult {
  std::string path;  // relative name at the receiver
  uint64_t bytes = 0;
  uint64_t digest = 0;
  bool skipped = false;  // already complete at the receiver (resume)
  std::string error;     // empty when the file arrived
};

struct SendReport {
  uint64_t bytes = 0;        // file bytes delivered by this run (not counting resumed blocks)
  uint64_t total_bytes = 0;  // size of all files
  uint64_t sent_bytes = 0;   // payload bytes on the wire
  uint64_t blocks_sent = 0;
  uint64_t resumed_blocks = 0;        // present at the receiver and verified against the source
  uint64_t retransmitted_blocks = 0;  // re-sent after a checksum mismatch or a lost stream
  uint64_t endgame_copies = 0;        // blocks sent a second time to bypass a slow stream
  double seconds = 0;
  int streams = 0;
  int streams_lost = 0;
  uint32_t rtt_us = 0;
  int send_buffer = 0;     // SO_SNDBUF requested (0 = autotuning)
  std::string congestion;  // TCP congestion control the connections used
  bool direct_io = false;
  bool uring = false;
  uint64_t digest = 0;  // one file: its digest; several: SessionDigest of all
  size_t files_failed = 0;
  size_t files_skipped = 0;
  std::vector<FileResult> files;
  std::vector<uint64_t> stream_bytes;
  std::vector<std::string> notices;
  // Steady state: the rate between the moments when 10% and 90% of this run's bytes were
  // acknowledged (no start-up, slow start or final fsync); 0 for copies under 64 MiB.
  double steady_gbit_per_s = 0;
  // Per-stage time and queue depths (stage_stats.h; docs/format/transfer.md).
  std::vector<StageTime> stages;
  std::vector<QueueDepth> queues;
};

// Errors: kInvalidArgument (options, sources), kPermission (token refused), kIo/kTimeout
// (network), kRemote (the receiver refused the session). Per-file failures do not fail the call:
// they are in report.files[i].error and report.files_failed.
Result<SendReport> Send(const SendOptions& options);

}  // namespace ferry::xfer
