// Internal to the sender (sender.h): the state shared by its threads.
//
// Locking: mu_ guards the per-file acknowledgement state (acked, hashes, n_acked, done flags),
// the retry queue and the finished-file list; Stream::mu guards that stream's unacked map and
// its dead flag. Lock order: Stream::mu before mu_ (never the reverse).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/mutex.h"
#include "xfer/block_io.h"
#include "xfer/block_queue.h"
#include "xfer/handshake.h"
#include "xfer/net.h"
#include "xfer/protocol.h"
#include "xfer/sender.h"
#include "xfer/sources.h"
#include "xfer/stage_stats.h"
#include "xfer/tcp_stats.h"
#include "xfer/tuning.h"

namespace ferry::xfer {

struct Ticket {
  uint32_t file = 0;
  uint64_t block = 0;
  int avoid_stream = -1;  // endgame copy: not on the stream that already carries the block
};

// One block ready to send: `length` bytes at `offset` in pool buffer `buffer` (a buffer holds
// the consecutive blocks of one read; it returns to the pool when all of them were sent).
struct ReadyBlock {
  int buffer = -1;
  uint32_t offset = 0;
  uint32_t file = 0;
  uint64_t block = 0;
  uint32_t length = 0;
  int avoid_stream = -1;
  bool verify = false;    // resume: hash and compare with the receiver's copy first
  uint64_t expected = 0;  // the receiver's hash when verify
};

inline uint64_t TicketKey(uint32_t file, uint64_t block) {
  return (static_cast<uint64_t>(file) << 40) | block;
}

struct SendFile {
  const SourceFile* src = nullptr;
  uint64_t n_blocks = 0;
  std::atomic<bool> failed{false};  // read by the reader and the streams without mu_
  // Guarded by SendSession::mu_.
  std::vector<uint64_t> hashes;
  std::vector<uint8_t> acked;
  uint64_t n_acked = 0;
  std::vector<uint64_t> remote_hash;  // resume: the receiver's hash per block
  std::vector<uint8_t> remote_has;
  bool skipped = false;        // complete at the receiver already
  bool receiver_done = false;  // FILE_DONE received
  bool finalized = false;
  FileDone done;
  std::string error;
};

struct InFlight {
  uint64_t hash = 0;
  std::chrono::steady_clock::time_point sent;
};

struct Stream {
  int index = 0;
  PendingConnect early;  // a connect started with the control connection's (before its thread)
  std::unique_ptr<Conn> conn;
  Mutex mu;
  std::unordered_map<uint64_t, InFlight> unacked FERRY_GUARDED_BY(mu);  // ticket key -> block
  bool dead FERRY_GUARDED_BY(mu) = false;
  std::atomic<bool> up{false};
  std::atomic<bool> gone{false};
  std::atomic<uint64_t> bytes{0};
  bool started = false;                            // main thread only: its threads were started
  TcpStats last_stats;                             // main thread only: the previous TCP_INFO sample
  double ack_latency_ns FERRY_GUARDED_BY(mu) = 0;  // EWMA of this stream's send-to-ACK time
  std::thread sender;
  std::thread acker;
};

class SendSession {
 public:
  SendSession(const SendOptions& options, SourceList sources);
  ~SendSession();
  SendSession(const SendSession&) = delete;
  SendSession& operator=(const SendSession&) = delete;
  Result<SendReport> Run();

 private:
  // sender.cc: control connection and the main loop.
  Status Connect();
  std::string ReceiverName() const;  // "receiver HOST:PORT", the context of connect errors
  Status StartStages();
  Status ExchangeManifest();
  Status MainLoop();
  Status HandleControlFrame();
  void FinalizeReady();
  void Finalize(uint32_t file);
  void FailFile(uint32_t file, const std::string& error);
  bool AllFinal();
  void Notice(std::string text);
  void EmitProgress();
  void Shutdown();
  SendReport BuildReport();

  // send_reader.cc: the I/O stage.
  void ReaderMain();
  struct ReadRange {
    uint32_t file = 0;
    uint64_t first = 0;
    uint32_t count = 0;
    int avoid_stream = -1;
  };
  bool NextRange(ReadRange& r);
  void ReleaseBlock(int buffer);
  int OpenSource(uint32_t file);
  void CloseIdleSources();
  void HandleReadCompletion(const IoCompletion& c);

  // send_stream.cc: the stream threads.
  void StreamMain(Stream& s);
  // The steps of StreamMain (send_stream.cc).
  Result<std::unique_ptr<Conn>> ConnectStream(Stream& s);
  bool AttachStream(Stream& s, std::unique_ptr<Conn> conn) FERRY_EXCLUDES(mu_);
  void SendBlocks(Stream& s);
  void AckMain(Stream& s, const PendingHandshake& pending);
  void KillStream(Stream& s, const std::string& why);
  void OnAck(uint32_t file, uint64_t block, uint64_t hash, bool resumed);
  void Endgame();
  void StartStream(Stream& s);
  void ScaleStreams();
  int started_streams_ = 0;  // main thread only
  std::chrono::steady_clock::time_point last_scale_;
  int LiveStreams();
  void Requeue(Ticket t, bool count_retransmit);
  void Pace(size_t bytes);

  const SendOptions& opt_;
  SourceList sources_;
  std::vector<std::unique_ptr<SendFile>> files_;
  SessionId session_{};
  std::unique_ptr<Conn> control_;
  PendingHandshake control_hs_;  // AUTH sent; AUTH_OK is checked before the receiver's answers
  std::vector<PendingConnect> early_;  // data connects started with the control connect
  TuningPlan plan_;
  uint32_t rtt_us_ = 0;
  std::chrono::steady_clock::time_point start_;

  Mutex mu_;
  std::deque<Ticket> retry_ FERRY_GUARDED_BY(mu_);
  std::vector<uint32_t> ack_done_ FERRY_GUARDED_BY(mu_);  // files whose blocks are all acked
  uint64_t acked_bytes_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t new_bytes_ FERRY_GUARDED_BY(mu_) = 0;  // acked by the receiver in this run
  uint64_t resumed_blocks_ FERRY_GUARDED_BY(mu_) = 0;
  // Steady-state marks (SendReport::steady_gbit_per_s): 10% and 90% of the bytes to send.
  uint64_t steady_lo_bytes_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t steady_hi_bytes_ FERRY_GUARDED_BY(mu_) = 0;
  int64_t steady_lo_ns_ FERRY_GUARDED_BY(mu_) = 0;
  int64_t steady_hi_ns_ FERRY_GUARDED_BY(mu_) = 0;
  // The first data stream's TCP congestion control.
  std::string stream_congestion_ FERRY_GUARDED_BY(mu_);
  std::unordered_set<uint64_t> duplicated_ FERRY_GUARDED_BY(mu_);  // re-sent by the endgame
  std::atomic<uint64_t> retransmits_{0};
  std::atomic<uint64_t> endgame_copies_{0};
  std::atomic<uint64_t> sent_bytes_{0};
  std::atomic<uint64_t> blocks_sent_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> state_ready_{false};  // the receiver's resume state is known
  std::atomic<bool> direct_used_{false};
  std::atomic<bool> direct_refused_noted_{false};

  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<BoundedQueue<ReadyBlock>> ready_;
  Waker reader_waker_;
  std::thread reader_;
  std::unique_ptr<BlockIo> io_;

  // Reader-thread state.
  struct OpenSrc {
    Fd fd;
    unsigned outstanding = 0;
  };
  std::unordered_map<uint32_t, OpenSrc> open_;
  struct ReadSlot {
    int buffer = -1;
    ReadRange range;
    uint32_t length = 0;  // bytes the range holds
    bool used = false;
    int64_t t_ns = 0;  // queued to the kernel then (stage timing)
  };
  uint32_t read_size_ = 0;  // bytes of one read (a whole number of blocks)
  uint32_t blocks_per_read_ = 1;
  std::unique_ptr<std::atomic<int>[]> buffer_refs_;  // blocks of a buffer not yet sent
  std::vector<ReadSlot> slots_;
  uint32_t next_file_ = 0;
  uint64_t next_block_ = 0;

  std::vector<std::unique_ptr<Stream>> streams_;

  // Where the time goes (SendReport::stages): the reader, then the stream threads.
  StageTimer st_read_;         // one read, from queued in the ring to its completion
  StageTimer st_read_submit_;  // io_uring_submit calls
  StageTimer st_reader_idle_;  // the reader waiting (no free buffer or read slot, or no work)
  StageTimer st_wait_block_;   // a stream waiting for a ready block (the reader is behind)
  StageTimer st_hash_;         // XXH3 of a block before it is sent
  StageTimer st_pace_;         // --max-rate pacing
  StageTimer st_send_;         // sending a block (the socket buffer full: the network is behind)
  Occupancy q_reads_;          // reads in flight, sampled whenever the reader submits
  Occupancy q_ready_;          // blocks ready to send, sampled when a stream takes one
  Occupancy q_free_buffers_;   // free block buffers, sampled whenever the reader submits

  Mutex pace_mu_;
  std::chrono::steady_clock::time_point pace_next_ FERRY_GUARDED_BY(pace_mu_);

  Mutex notice_mu_;
  std::vector<std::string> notices_ FERRY_GUARDED_BY(notice_mu_);  // all, for the report
  // Not yet passed to on_notice.
  std::vector<std::string> notice_queue_ FERRY_GUARDED_BY(notice_mu_);
  size_t finalized_count_ = 0;
  std::chrono::steady_clock::time_point last_progress_emit_;
};

}  // namespace ferry::xfer
