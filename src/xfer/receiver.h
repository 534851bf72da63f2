// Receiver: the daemon side of `ferry recv`. Serves many transfer sessions at once, each with
// one control connection and N data streams, and writes every file under one root directory.
//
// Per session:
//   control thread -- authenticates, reads the manifest (every path validated before anything
//                     is created), answers resume queries from the journals, then waits for BYE
//   N stream threads -- read DATA frames into pool buffers, verify each block's XXH3-64 (a
//                     mismatch is NACKed and the sender re-sends), queue it for the writer
//   writer thread  -- io_uring writes at block offsets (O_DIRECT where the filesystem allows;
//                     unaligned tails padded and the file truncated at the end), periodic
//                     fdatasync + journal records, and on completion: truncate, fsync, rename
//                     from the hidden ".part" name into place, FILE_DONE with the digest
// Thread-safety: Start/Stop/port may be called from any thread; callbacks run on session
// threads (concurrently for different sessions).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "xfer/stage_stats.h"

namespace ferry::xfer {

struct SessionSummary {
  std::string peer;
  std::string session;  // hex id
  size_t files = 0;
  size_t files_done = 0;
  size_t files_failed = 0;
  size_t files_skipped = 0;
  uint64_t bytes = 0;       // payload bytes written in this session
  uint64_t bad_blocks = 0;  // blocks that failed their checksum (re-sent by the sender)
  // The most any file's final fsync had to flush: bytes written since its last datasync.
  // FILE_DONE waits for that fsync, so this is kept small (see ReceiverOptions).
  uint64_t final_flush_max = 0;
  double seconds = 0;
  int streams = 0;
  bool direct_io = false;
  bool uring = false;
  uint64_t digest = 0;  // one file: its digest; several: SessionDigest (0 for files not done)
  std::string error;    // empty when the sender ended the session with BYE
  // Per-stage time and queue depths (stage_stats.h; docs/format/transfer.md).
  std::vector<StageTime> stages;
  std::vector<QueueDepth> queues;
};

struct ReceiverOptions {
  std::string listen_addr = "0.0.0.0";
  uint16_t port = 0;  // 0: any free port (see Receiver::port())
  std::string root;
  std::string token;  // "" = no authentication
  int timeout_ms = 30000;
  uint64_t memory_budget = 2ull << 30;  // block buffers per session at most
  unsigned queue_depth = 32;
  bool direct_io = true;
  bool use_uring = true;
  bool preallocate = true;  // fallocate each file (a full disk fails before any data)
  // Verify and acknowledge every block but write nothing (no file, directory or journal is
  // created; root may be empty): ferry's own network path without the destination disk, as a
  // benchmark. FILE_DONE then means verified, not durable; the sender is told by a NOTICE.
  bool discard = false;
  // A file's written blocks are datasynced (and recorded in its resume journal) every
  // journal_sync_bytes or journal_sync_ms; in its last journal_sync_bytes, every 1/8 of that.
  uint64_t journal_sync_bytes = 256u << 20;
  int journal_sync_ms = 1000;
  int max_connections = 512;
  std::function<void(const SessionSummary&)> on_session;
  std::function<void(std::string_view)> on_log;
};

class Receiver {
 public:
  // Opens the root, binds and starts accepting. kInvalidArgument/kIo on a bad root or address.
  static Result<std::unique_ptr<Receiver>> Start(ReceiverOptions options);
  ~Receiver();
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  uint16_t port() const;
  // Closes the listener and every session (incomplete files keep their journals), joins all
  // threads. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit Receiver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry::xfer
