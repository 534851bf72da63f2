#include "xfer/sender.h"

#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <span>

#include "base/strings.h"
#include "xfer/handshake.h"
#include "xfer/send_session.h"

namespace ferry::xfer {
namespace {

constexpr size_t kManifestChunkBytes = 1u << 20;
constexpr uint64_t kDefaultMemoryBudget = 1ull << 30;
constexpr uint32_t kReadBytes = 16u << 20;

int64_t MicrosSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now()
                                                               - t0)
      .count();
}

}  // namespace

Result<SendReport> Send(const SendOptions& options) {
  if (options.block_size < kMinBlockSize || options.block_size > kMaxBlockSize
      || options.block_size % kMinBlockSize != 0) {
    return InvalidArgumentError("block size must be a multiple of 4 KiB in [4 KiB, 256 MiB]");
  }
  if (options.streams < 0 || options.streams > kMaxStreams) {
    return InvalidArgumentError("streams must be in [1, 64]");
  }
  if (options.queue_depth < 1 || options.queue_depth > 1024) {
    return InvalidArgumentError("queue depth must be in [1, 1024]");
  }
  if (options.paths.empty()) {
    return InvalidArgumentError("nothing to send");
  }
  SourceList sources = FERRY_TRY(CollectSources(options.paths, options.dest, options.dest_is_name));
  SendSession session(options, std::move(sources));
  return session.Run();
}

SendSession::SendSession(const SendOptions& options, SourceList sources)
    : opt_(options), sources_(std::move(sources)) {
  files_.reserve(sources_.files.size());
  for (const SourceFile& f : sources_.files) {
    auto sf = std::make_unique<SendFile>();
    sf->src = &f;
    sf->n_blocks = BlockCount(f.size, options.block_size);
    sf->hashes.assign(sf->n_blocks, 0);
    sf->acked.assign(sf->n_blocks, 0);
    files_.push_back(std::move(sf));
  }
}

SendSession::~SendSession() {
  Shutdown();
}

void SendSession::Notice(std::string text) {
  MutexLock lock(notice_mu_);
  notices_.push_back(text);
  notice_queue_.push_back(std::move(text));
}

Result<SendReport> SendSession::Run() {
  start_ = std::chrono::steady_clock::now();
  for (const std::string& s : sources_.skipped) {
    Notice("skipped " + s);
  }
  FERRY_TRY(RandomBytes(session_));
  FERRY_TRY(Connect());
  FERRY_TRY(ExchangeManifest());
  Status loop = MainLoop();
  // From here on a closing stream is the end of the session, not a loss.
  stop_.store(true);
  // Every FILE_DONE means synced and renamed durably: say goodbye without waiting for the
  // receiver's answer.
  if (loop && control_) {
    (void)control_->SendFrame({.type = FrameType::kBye});
  }
  Shutdown();
  EmitProgress();
  if (!loop) {
    return std::move(loop).error();
  }
  return BuildReport();
}

std::string SendSession::ReceiverName() const {
  return "receiver " + opt_.host + ":" + std::to_string(opt_.port);
}

Status SendSession::Connect() {
  const std::string where = ReceiverName();
  std::vector<SockAddr> addrs = FERRY_TRY_CTX(Resolve(opt_.host, opt_.port), where);
  auto t0 = std::chrono::steady_clock::now();
  // The data streams' TCP handshakes run together with the control connection's, so that
  // their own handshakes start one RTT sooner. A long path's plan opens kInitialStreams (or
  // the requested count); a short one's may want fewer, and the extra connections are closed
  // unused (the receiver drops a connection that closes before HELLO).
  auto control = PendingConnect::Start(addrs[0], 0, 0, opt_.congestion);
  if (!control && control.error().code() == ErrorCode::kInvalidArgument) {
    return std::move(control).error().AddContext(where);
  }
  if (control) {
    int early = opt_.streams > 0 ? std::min(opt_.streams, kMaxStreams) : kInitialStreams;
    for (int i = 0; i < early; ++i) {
      auto p = PendingConnect::Start(addrs[0], 0, 0, opt_.congestion);
      if (!p) {
        break;  // the streams connect on their own
      }
      early_.push_back(std::move(*p));
    }
  }
  Result<std::unique_ptr<Conn>> c =
      control ? control->Finish(opt_.timeout_ms) : std::move(control).error();
  if (!c) {
    early_.clear();  // the first address did not answer: try the others one by one
    if (addrs.size() < 2) {
      return std::move(c).error().AddContext(where);
    }
    c = Conn::ConnectAny(std::span(addrs).subspan(1), opt_.timeout_ms, 0, 0, opt_.congestion);
  }
  control_ = FERRY_TRY_CTX(std::move(c), where);
  // The TCP handshake is the first RTT sample; it is enough to size buffers and streams, so
  // the data streams connect (and the reader starts) while the control handshake runs.
  rtt_us_ = static_cast<uint32_t>(MicrosSince(t0));
  if (uint32_t k = control_->KernelRttUs(); k > 0) {
    rtt_us_ = std::min(rtt_us_, k);
  }
  plan_ = PlanSender(opt_.rate_bps, rtt_us_, opt_.streams, ReadKernelBufferLimits());
  for (const std::string& n : plan_.notes) {
    Notice(n);
  }
  for (const std::string& w : plan_.warnings) {
    Notice("warning: " + w);
  }
  FERRY_TRY(StartStages());
  Hello hello;
  hello.role = Role::kControl;
  hello.session = session_;
  FERRY_TRY(RandomBytes(hello.client_nonce));
  // The manifest follows AUTH at once (the receiver reads nothing past AUTH before it
  // verified it); ExchangeManifest checks AUTH_OK before it reads the receiver's answer.
  control_hs_ = FERRY_TRY_CTX(BeginClientHandshake(*control_, hello, KeyBytes(opt_.token)), where);
  rtt_us_ = std::min(rtt_us_, control_hs_.rtt_us);
  return OkStatus();
}

Status SendSession::StartStages() {
  // Reads are at least kReadBytes (whole blocks): the disk wants big requests, while the
  // block (the unit of checksums, acknowledgements and re-sends) stays small so that the last
  // blocks of a transfer do not keep a slow stream busy long after the others finished. With
  // 4 MiB reads (64 MiB in flight) a virtio disk that fio reads at 6.3 Gbit/s with more in
  // flight gave the streams blocks at 3.9: they waited for blocks 52-61% of their time.
  const uint32_t block = opt_.block_size;
  blocks_per_read_ = std::max<uint32_t>(1, kReadBytes / block);
  read_size_ = blocks_per_read_ * block;
  size_t n_buffers = opt_.buffers;
  if (n_buffers == 0) {
    n_buffers = opt_.queue_depth + static_cast<size_t>(plan_.streams) + 4;
    size_t cap =
        std::max<size_t>(kDefaultMemoryBudget / read_size_, static_cast<size_t>(plan_.streams) + 2);
    n_buffers = std::min(n_buffers, cap);
  }
  n_buffers = std::max<size_t>(n_buffers, 2);
  pool_ = std::make_unique<BufferPool>(n_buffers, read_size_);
  pool_->set_waker(&reader_waker_);
  buffer_refs_ = std::make_unique<std::atomic<int>[]>(n_buffers);
  ready_ = std::make_unique<BoundedQueue<ReadyBlock>>(n_buffers * blocks_per_read_);
  io_ = FERRY_TRY(BlockIo::Create(std::max(opt_.queue_depth, 1u), opt_.use_uring));
  if (!io_->uses_uring()) {
    Notice("io_uring unavailable (" + io_->fallback_reason() + "): synchronous reads");
  }
  slots_.resize(opt_.queue_depth);
  if (sources_.total_bytes >= (64u << 20)) {
    MutexLock lock(mu_);
    steady_lo_bytes_ = sources_.total_bytes / 10;
    steady_hi_bytes_ = sources_.total_bytes - steady_lo_bytes_;
  }
  // Without --resume nothing the receiver says changes what is read: start reading now.
  state_ready_.store(!opt_.resume);
  reader_ = std::thread([this] { ReaderMain(); });
  // Every stream that may be added later exists from the start, so that the vector never
  // changes while other threads walk it.
  for (int i = 0; i < plan_.max_streams; ++i) {
    auto s = std::make_unique<Stream>();
    s->index = i;
    streams_.push_back(std::move(s));
  }
  for (int i = 0; i < plan_.streams; ++i) {
    if (static_cast<size_t>(i) < early_.size()) {
      streams_[static_cast<size_t>(i)]->early = std::move(early_[static_cast<size_t>(i)]);
    }
    StartStream(*streams_[static_cast<size_t>(i)]);
  }
  early_.clear();  // more than the plan wants: closed before HELLO
  last_scale_ = std::chrono::steady_clock::now();
  return OkStatus();
}

Status SendSession::ExchangeManifest() {
  const auto total = static_cast<uint32_t>(files_.size());
  uint32_t first = 0;
  // Bounded by the file count: every round sends at least one entry (or the final empty one).
  do {
    ManifestChunk chunk;
    chunk.block_size = opt_.block_size;
    chunk.streams = static_cast<uint16_t>(plan_.max_streams);
    chunk.rate_bps = opt_.rate_bps;
    chunk.rtt_us = rtt_us_;
    chunk.total_files = total;
    chunk.first_file_id = first;
    size_t bytes = 0;
    uint32_t i = first;
    for (; i < total && bytes < kManifestChunkBytes; ++i) {
      const SourceFile& f = *files_[i]->src;
      chunk.entries.push_back({f.size, f.mtime_ns, f.mode, f.rel_path});
      bytes += 22 + f.rel_path.size();
    }
    chunk.source_name = sources_.source_name;
    uint16_t flags = (i == total ? kManifestLast : 0) | (opt_.resume ? kManifestResume : 0)
                     | (sources_.source_name.empty() ? 0 : kManifestNamed);
    FERRY_TRY(
        control_->SendFrame({.type = FrameType::kManifest, .flags = flags}, EncodeManifest(chunk)));
    first = i;
  } while (first < total);
  FERRY_TRY_CTX(FinishClientHandshake(*control_, control_hs_, KeyBytes(opt_.token)),
                ReceiverName());

  for (uint64_t n = 0; n < 4ull * total + 100000; ++n) {
    FrameHeader h;
    auto r = control_->RecvHeader();
    if (!r) {
      return std::move(r).error().AddContext("receiver");
    }
    h = *r;
    auto payload = FERRY_TRY(control_->RecvPayload(h));
    switch (h.type) {
      case FrameType::kStateEnd:
        state_ready_.store(true);
        reader_waker_.Wake();
        return OkStatus();
      case FrameType::kError:
        return DecodeErrorMessage(payload, "receiver refused the transfer: ");
      case FrameType::kNotice:
        Notice("receiver: " + std::string(payload.begin(), payload.end()));
        break;
      case FrameType::kFileError: {
        if (h.file_id >= total) {
          return CorruptionError("FILE_ERROR for unknown file");
        }
        Error e = DecodeErrorMessage(payload, "");
        FailFile(h.file_id, e.message());
        break;
      }
      case FrameType::kFileState: {
        if (h.file_id >= total) {
          return CorruptionError("FILE_STATE for unknown file");
        }
        SendFile& f = *files_[h.file_id];
        MutexLock lock(mu_);
        if (h.flags == static_cast<uint16_t>(FileStateKind::kComplete)) {
          f.skipped = true;
          break;
        }
        auto blocks = FERRY_TRY(DecodeBlockHashes(payload));
        if (f.remote_has.empty()) {
          f.remote_has.assign(f.n_blocks, 0);
          f.remote_hash.assign(f.n_blocks, 0);
        }
        for (const BlockHash& b : blocks) {
          if (b.block < f.n_blocks) {
            f.remote_has[b.block] = 1;
            f.remote_hash[b.block] = b.hash;
          }
        }
        break;
      }
      default:
        return CorruptionError("unexpected " + std::string(FrameTypeName(h.type))
                               + " before STATE_END");
    }
  }
  return CorruptionError("receiver sent too many frames before STATE_END");
}

Status SendSession::MainLoop() {
  auto last_change = std::chrono::steady_clock::now();
  auto last_ping = last_change;
  uint64_t last_acked = 0;
  uint64_t last_sent = 0;
  size_t last_final = 0;
  // Bounded in time: each round waits at most 200 ms, and a round without progress for
  // timeout_ms ends the loop.
  while (!AllFinal()) {
    pollfd p{control_->fd(), POLLIN, 0};
    int n = ::poll(&p, 1, 200);
    if (n > 0) {
      FERRY_TRY(HandleControlFrame());
    }
    FinalizeReady();
    Endgame();
    ScaleStreams();
    EmitProgress();
    int live = 0;
    int gone = 0;
    for (auto& s : streams_) {
      live += s->up.load() && !s->gone.load() ? 1 : 0;
      gone += s->gone.load() ? 1 : 0;
    }
    if (gone == started_streams_ && !AllFinal()) {
      return Error(ErrorCode::kIo,
                   "all " + std::to_string(gone)
                       + " data streams were lost (rerun with --resume to continue)");
    }
    uint64_t acked;
    size_t final_count;
    {
      MutexLock lock(mu_);
      acked = acked_bytes_;
      final_count = finalized_count_;
    }
    uint64_t sent = sent_bytes_.load();
    auto now = std::chrono::steady_clock::now();
    // Keeps the session alive at the receiver while nothing else flows on the control
    // connection (e.g. while blocks are verified locally for --resume).
    if (now - last_ping > std::chrono::seconds(5)) {
      last_ping = now;
      FERRY_TRY(control_->SendFrame({.type = FrameType::kPing}, EncodeU64(0)));
    }
    if (acked != last_acked || sent != last_sent || final_count != last_final) {
      last_acked = acked;
      last_sent = sent;
      last_final = final_count;
      last_change = now;
    } else if (now - last_change > std::chrono::milliseconds(opt_.timeout_ms)) {
      return Error(ErrorCode::kTimeout, "no progress for " + std::to_string(opt_.timeout_ms / 1000)
                                            + " s (" + std::to_string(live) + " streams up)");
    }
  }
  return OkStatus();
}

Status SendSession::HandleControlFrame() {
  auto hr = control_->RecvHeader();
  if (!hr) {
    return std::move(hr).error().AddContext(
        "control connection to the receiver lost (rerun with --resume to continue)");
  }
  FrameHeader h = *hr;
  auto payload = FERRY_TRY(control_->RecvPayload(h));
  const auto total = static_cast<uint32_t>(files_.size());
  switch (h.type) {
    case FrameType::kFileDone: {
      if (h.file_id >= total) {
        return CorruptionError("FILE_DONE for unknown file");
      }
      FileDone d = FERRY_TRY(DecodeFileDone(payload));
      MutexLock lock(mu_);
      SendFile& f = *files_[h.file_id];
      f.receiver_done = true;
      f.done = d;
      if (f.n_acked == f.n_blocks) {
        ack_done_.push_back(h.file_id);
      }
      return OkStatus();
    }
    case FrameType::kFileError: {
      if (h.file_id >= total) {
        return CorruptionError("FILE_ERROR for unknown file");
      }
      FailFile(h.file_id, "receiver: " + DecodeErrorMessage(payload, "").ToString());
      return OkStatus();
    }
    case FrameType::kNotice:
      Notice("receiver: " + std::string(payload.begin(), payload.end()));
      return OkStatus();
    case FrameType::kError:
      return DecodeErrorMessage(payload, "receiver: ");
    case FrameType::kPing:
      return control_->SendFrame({.type = FrameType::kPong}, payload);
    case FrameType::kPong:
      return OkStatus();
    default:
      return CorruptionError("unexpected " + std::string(FrameTypeName(h.type))
                             + " on the control connection");
  }
}

void SendSession::FailFile(uint32_t file, const std::string& error) {
  SendFile& f = *files_[file];
  MutexLock lock(mu_);
  if (f.finalized) {
    return;
  }
  f.failed.store(true);
  f.finalized = true;
  f.error = error;
  ++finalized_count_;
}

void SendSession::FinalizeReady() {
  std::vector<uint32_t> ready;
  {
    MutexLock lock(mu_);
    ready.swap(ack_done_);
  }
  for (uint32_t id : ready) {
    Finalize(id);
  }
}

void SendSession::Finalize(uint32_t file) {
  SendFile& f = *files_[file];
  std::string error;
  {
    MutexLock lock(mu_);
    if (f.finalized || !f.receiver_done || f.n_acked != f.n_blocks) {
      return;
    }
    uint64_t mine = FileDigest(f.src->size, opt_.block_size, f.hashes);
    if (mine != f.done.digest || f.done.bytes != f.src->size) {
      error =
          "digest mismatch: sender " + DigestHex(mine) + ", receiver " + DigestHex(f.done.digest);
    }
    f.finalized = true;
    f.error = error;
    if (!error.empty()) {
      f.failed.store(true);
    }
    ++finalized_count_;
  }
  struct stat st;
  if (error.empty() && ::stat(f.src->local_path.c_str(), &st) == 0) {
    int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (static_cast<uint64_t>(st.st_size) != f.src->size || mtime != f.src->mtime_ns) {
      Notice("warning: " + f.src->local_path + " changed while it was sent");
    }
  }
}

bool SendSession::AllFinal() {
  MutexLock lock(mu_);
  size_t skipped = 0;
  for (const auto& f : files_) {
    skipped += f->skipped && !f->finalized ? 1u : 0u;
  }
  return finalized_count_ + skipped == files_.size();
}

void SendSession::EmitProgress() {
  std::vector<std::string> pending;
  {
    MutexLock lock(notice_mu_);
    pending.swap(notice_queue_);
  }
  if (opt_.on_notice) {
    for (const std::string& n : pending) {
      opt_.on_notice(n);
    }
  }
  if (!opt_.on_progress) {
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (now - last_progress_emit_ < std::chrono::milliseconds(190)) {
    return;
  }
  last_progress_emit_ = now;
  SendProgress p;
  {
    MutexLock lock(mu_);
    p.bytes_done = acked_bytes_;
  }
  p.bytes_total = sources_.total_bytes;
  p.sent_bytes = sent_bytes_.load();
  p.seconds = static_cast<double>(MicrosSince(start_)) / 1e6;
  for (auto& s : streams_) {
    if (s->started) {
      p.stream_bytes.push_back(s->bytes.load());
      p.live_streams += s->up.load() && !s->gone.load() ? 1 : 0;
    }
  }
  opt_.on_progress(p);
}

void SendSession::Shutdown() {
  stop_.store(true);
  if (ready_) {
    ready_->Close();
  }
  if (pool_) {
    pool_->Close();
  }
  reader_waker_.Wake();
  for (auto& s : streams_) {
    MutexLock lock(s->mu);
    if (s->conn) {
      s->conn->Shutdown();
    }
  }
  for (auto& s : streams_) {
    if (s->sender.joinable()) {
      s->sender.join();
    }
    if (s->acker.joinable()) {
      s->acker.join();
    }
  }
  if (reader_.joinable()) {
    reader_.join();
  }
  if (control_) {
    control_->Shutdown();
  }
}

SendReport SendSession::BuildReport() {
  SendReport r;
  r.seconds = static_cast<double>(MicrosSince(start_)) / 1e6;
  r.total_bytes = sources_.total_bytes;
  r.sent_bytes = sent_bytes_.load();
  r.blocks_sent = blocks_sent_.load();
  r.retransmitted_blocks = retransmits_.load();
  r.endgame_copies = endgame_copies_.load();
  r.streams = started_streams_;
  r.rtt_us = rtt_us_;
  r.send_buffer = plan_.send_buffer;
  r.direct_io = direct_used_.load();
  r.uring = io_ && io_->uses_uring();
  std::vector<uint64_t> digests;
  MutexLock lock(mu_);
  r.congestion =
      stream_congestion_.empty() && control_ ? control_->CongestionControl() : stream_congestion_;
  r.bytes = new_bytes_;
  if (steady_hi_ns_ > steady_lo_ns_ && steady_lo_ns_ > 0) {
    r.steady_gbit_per_s = static_cast<double>(steady_hi_bytes_ - steady_lo_bytes_) * 8
                          / static_cast<double>(steady_hi_ns_ - steady_lo_ns_);
  }
  const int streams = std::max(1, started_streams_);
  r.stages = {st_read_.Snapshot("read"),
              st_read_submit_.Snapshot("read_submit"),
              st_reader_idle_.Snapshot("reader_idle"),
              st_wait_block_.Snapshot("wait_block", streams),
              st_hash_.Snapshot("hash", streams),
              st_pace_.Snapshot("pace", streams),
              st_send_.Snapshot("send", streams)};
  r.queues = {q_reads_.Snapshot("reads_inflight", slots_.size()),
              q_ready_.Snapshot("ready_blocks", pool_ ? pool_->count() * blocks_per_read_ : 0),
              q_free_buffers_.Snapshot("free_buffers", pool_ ? pool_->count() : 0)};
  r.resumed_blocks = resumed_blocks_;
  for (const auto& f : files_) {
    FileResult fr;
    fr.path = f->src->rel_path;
    fr.bytes = f->src->size;
    fr.skipped = f->skipped;
    fr.error = f->error;
    if (!f->finalized && !f->skipped) {
      fr.error = "not completed";
    }
    fr.digest = f->done.digest;
    r.files_failed += fr.error.empty() ? 0u : 1u;
    r.files_skipped += f->skipped ? 1u : 0u;
    digests.push_back(fr.digest);
    r.files.push_back(std::move(fr));
  }
  r.digest = digests.size() == 1 ? digests[0] : SessionDigest(digests);
  for (auto& s : streams_) {
    if (s->started) {
      r.stream_bytes.push_back(s->bytes.load());
      r.streams_lost += s->gone.load() ? 1 : 0;
    }
  }
  {
    MutexLock nl(notice_mu_);
    r.notices = notices_;
  }
  return r;
}

}  // namespace ferry::xfer
