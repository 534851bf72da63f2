// Internal to the receiver (receiver.h): one transfer session and the daemon's shared state.
//
// Threads: the control thread owns the manifest until the writer starts; afterwards RecvFile
// state belongs to the writer thread alone, and stream threads only read the immutable
// manifest fields (entry, n_blocks). Counters are atomics. data_conns_ is guarded by conns_mu_.
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/mutex.h"
#include "xfer/block_io.h"
#include "xfer/block_queue.h"
#include "xfer/journal.h"
#include "xfer/net.h"
#include "xfer/protocol.h"
#include "xfer/receiver.h"
#include "xfer/stage_stats.h"

namespace ferry::xfer {

class RecvSession;

struct Receiver::Impl {
  ReceiverOptions opt;
  Fd root;
  Fd listener;
  uint16_t port = 0;
  std::atomic<bool> stopping{false};
  std::thread acceptor;

  struct ConnThread {
    std::thread thread;
    std::shared_ptr<Conn> conn;
    std::atomic<bool> done{false};
  };
  Mutex mu;
  std::list<ConnThread> conns FERRY_GUARDED_BY(mu);
  std::vector<std::pair<SessionId, std::weak_ptr<RecvSession>>> sessions FERRY_GUARDED_BY(mu);
  std::set<std::string> active_paths FERRY_GUARDED_BY(mu);
  uint64_t pool_bytes FERRY_GUARDED_BY(mu) = 0;  // block buffers of all sessions
  // Pools of ended sessions, kept for the next one: first-touching fresh memory is a large
  // part of a transfer's CPU cost. Dropped after a minute unused.
  struct IdlePool {
    std::unique_ptr<BufferPool> pool;
    std::chrono::steady_clock::time_point since;
  };
  std::vector<IdlePool> idle_pools FERRY_GUARDED_BY(mu);
  std::unique_ptr<BufferPool> TakePool(size_t count, size_t buffer_size) FERRY_REQUIRES(mu);
  void KeepPool(std::unique_ptr<BufferPool> pool) FERRY_EXCLUDES(mu);
  void DropIdlePools(bool all) FERRY_EXCLUDES(mu);
  Mutex log_mu;

  void AcceptLoop();
  void Serve(const std::shared_ptr<Conn>& conn);
  void Log(const std::string& line);
  std::shared_ptr<RecvSession> FindSession(const SessionId& id);
  bool ClaimPath(const std::string& path);
  void ReleasePath(const std::string& path);
};

struct RecvFile {
  enum class State { kPending, kOpen, kFinishing, kDone, kFailed, kSkipped };
  ManifestEntry entry;
  uint64_t n_blocks = 0;
  std::string dir;
  std::string name;
  State state = State::kPending;
  bool claimed = false;
  std::vector<BlockHash> resumed;  // journal records found at manifest time
  bool resumable = false;
  // Writer-thread state.
  Fd dir_fd;
  Fd fd;
  bool direct = false;
  bool use_journal = false;
  Journal journal;
  uint64_t journal_records = 0;
  std::vector<uint64_t> hashes;
  std::vector<uint8_t> have;
  uint64_t n_have = 0;
  std::vector<BlockHash> unsynced;
  std::vector<BlockHash> syncing;
  uint64_t unsynced_bytes = 0;
  bool sync_inflight = false;
  bool final_sync_submitted = false;
  bool renamed = false;  // in place; waiting for the directory fsync
  bool dirty_listed = false;
  unsigned writes_inflight = 0;
  int64_t sync_start_ns = 0;  // the sync in flight was queued then (stage timing)
  std::chrono::steady_clock::time_point last_sync;
  uint64_t digest = 0;
};

struct WriteItem {
  int buffer = -1;
  uint32_t file = 0;
  uint64_t block = 0;
  uint32_t length = 0;
  uint64_t hash = 0;
  std::shared_ptr<Conn> conn;  // where the ACK goes
  uint32_t submitted = 0;      // writer: bytes of the write (tail padded for O_DIRECT)
  uint32_t done = 0;           // writer: bytes written so far
  unsigned space_retries = 0;  // writer: times this write waited for room after ENOSPC
  uint64_t space_epoch = 0;    // writer: RecvSession::space_epoch_ when it was submitted
  int64_t t_ns = 0;            // StageNowNs() when queued; writer: when its write was queued
};

class RecvSession : public std::enable_shared_from_this<RecvSession> {
 public:
  RecvSession(Receiver::Impl& owner, std::shared_ptr<Conn> control, const Hello& hello);
  const SessionId& id() const { return id_; }
  // The control connection's thread: the whole session lifetime.
  void RunControl();
  // A data connection's thread.
  void RunData(const std::shared_ptr<Conn>& conn);

 private:
  void Register();
  void Unregister();
  void SetReady(bool ready);
  Status ReadManifest();
  Status PlaceNamedFile(ManifestChunk& m);
  Status SendResumeState();
  void LoadResume(RecvFile& f);
  void Teardown(const std::string& error);
  // The steps of Teardown (receiver.cc).
  void StopAndJoin() FERRY_EXCLUDES(ready_mu_, conns_mu_);
  void ReleaseResources() FERRY_EXCLUDES(owner_.mu, conns_mu_);
  SessionSummary Summarize(const std::string& error);
  // The steps of RunControl (receiver.cc).
  void RefuseManifest(const Error& e);
  uint64_t ClaimFiles();  // returns the files' total size
  void Announce(uint64_t total_bytes);
  size_t ReserveBuffers() FERRY_EXCLUDES(owner_.mu);  // below 2: the budget is in use
  Status StartWriting(size_t n_buffers) FERRY_EXCLUDES(owner_.mu);
  std::string ServeControl();  // until BYE; the error that ended it, empty for BYE
  // The steps of RunData (receiver.cc).
  bool WaitReady() FERRY_EXCLUDES(ready_mu_);
  bool AddDataConn(const std::shared_ptr<Conn>& conn) FERRY_EXCLUDES(conns_mu_);
  std::string CheckDataFrame(const FrameHeader& h) const;
  int AcquireBuffer();
  std::string ServeData(const std::shared_ptr<Conn>& conn);  // the protocol error, if any
  void Log(const std::string& line) { owner_.Log("session " + short_id_ + ": " + line); }
  void SendControl(FrameType type, uint32_t file_id, std::span<const uint8_t> payload);
  // A NOTICE line for the sender (shown to its user).
  void SendNotice(std::string_view text);
  void Touch();

  // recv_writer.cc
  void WriterMain();
  void HandleItem(WriteItem& item);
  void HandleCompletion(const IoCompletion& c);
  Status OpenFile(RecvFile& f);
  void BeginFinish(RecvFile& f, uint32_t id);
  // The block is in place (written, or verified with --discard): have, hash, bytes.
  void RecordBlock(RecvFile& f, const WriteItem& item);
  void SubmitFinalSync(RecvFile& f, uint32_t id);
  void FinishFile(RecvFile& f, uint32_t id);
  void FileDurable(RecvFile& f, uint32_t id);
  // Marks f failed and tells the sender. Its partial data stays for --resume when the journal
  // has records, unless keep_partial is false.
  void FailFile(RecvFile& f, uint32_t id, const Error& e, bool keep_partial = true);
  // A write of slot got ENOSPC. Parks it, to be written again once released space is free,
  // when a failed file's data was deleted since it was submitted, or else after giving up the
  // open file with the most left to write, when that is not the slot's own file. Returns false
  // when nothing can make room: the caller fails the slot's file.
  bool MakeRoom(WriteItem& slot);
  void RetryParkedWrites();
  void JournalTick(bool force);
  void FlushOnExit();
  void Ack(const WriteItem& item, AckStatus status);
  void Submit();

  Receiver::Impl& owner_;
  std::shared_ptr<Conn> control_;
  SessionId id_;
  std::string short_id_;
  std::string peer_;
  std::chrono::steady_clock::time_point start_;

  uint32_t block_size_ = 0;
  int streams_ = 0;
  uint64_t rate_bps_ = 0;
  uint32_t rtt_us_ = 0;
  bool resume_ = false;
  std::vector<RecvFile> files_;

  std::unique_ptr<BufferPool> pool_;
  uint64_t pool_bytes_ = 0;        // this session's share of the memory budget
  uint64_t pool_bytes_total_ = 0;  // the same, kept after Teardown gave it back
  std::unique_ptr<BoundedQueue<WriteItem>> queue_;
  Waker writer_waker_;
  std::thread writer_;
  std::atomic<bool> closing_{false};
  Mutex ready_mu_;
  CondVar ready_cv_;
  bool ready_ FERRY_GUARDED_BY(ready_mu_) = false;     // pool, queue and files are set up
  bool finished_ FERRY_GUARDED_BY(ready_mu_) = false;  // the session will never become ready
  std::atomic<int64_t> last_activity_ns_{0};

  Mutex conns_mu_;
  std::vector<std::shared_ptr<Conn>> data_conns_ FERRY_GUARDED_BY(conns_mu_);
  std::atomic<int> max_streams_seen_{0};

  // Writer-thread state.
  std::unique_ptr<BlockIo> io_;
  std::vector<WriteItem> slots_;  // indexed by buffer
  std::vector<uint32_t> dirty_;   // files with journal records waiting for a sync
  std::string cached_dir_;
  Fd cached_dir_fd_;
  bool noted_buffered_ = false;
  std::vector<int> parked_;          // slots whose write waits for room
  std::vector<uint32_t> releasing_;  // failed files whose deleted data still has writes queued
  uint64_t space_epoch_ = 0;         // counts the failed files whose data was deleted

  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> bad_blocks_{0};
  std::atomic<uint64_t> final_flush_max_{0};  // SessionSummary::final_flush_max
  std::atomic<size_t> files_done_{0};
  std::atomic<size_t> files_failed_{0};
  std::atomic<bool> direct_used_{false};

  // Where the time goes (SessionSummary::stages): stream threads, then the writer.
  StageTimer st_wait_frame_;    // waiting for the next frame header (the sender or network)
  StageTimer st_buffer_wait_;   // waiting for a free block buffer (the writer is behind)
  StageTimer st_socket_read_;   // receiving a block's payload into its buffer, hashing each piece
  StageTimer st_hash_;          // the payload's digest (what is left after the hashed pieces)
  StageTimer st_queue_push_;    // handing the block to the writer
  StageTimer st_queued_;        // a block's time in the write queue
  StageTimer st_write_submit_;  // io_uring_submit calls
  StageTimer st_write_;         // one write, from queued in the ring to its completion
  StageTimer st_fsync_;         // datasyncs (journal) and final fsyncs
  StageTimer st_ack_;           // sending ACKs
  StageTimer st_writer_idle_;   // the writer with nothing to do
  Occupancy q_writes_;          // writes in flight, sampled whenever the writer submits
  Occupancy q_free_buffers_;    // free block buffers, sampled when a stream takes one
  Occupancy q_write_queue_;     // blocks waiting for the writer, sampled at each push
};

}  // namespace ferry::xfer
