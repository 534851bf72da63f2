#include "xfer/receiver.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/hash.h"
#include "base/strings.h"
#include "xfer/handshake.h"
#include "xfer/paths.h"
#include "xfer/recv_session.h"
#include "xfer/tuning.h"

namespace ferry::xfer {
namespace {

// A block's payload is received and hashed in pieces of this size: each piece is hashed right
// after it arrived, while it is still in cache (L2 is 1 MiB a core here). 256 KiB pieces cost
// more receiver CPU per GB than they saved when the writer was behind: more wake-ups a block.
constexpr size_t kHashPiece = 1u << 20;
// A session's block buffers, at least (the memory budget permitting).
constexpr size_t kWriteBufferBytes = 128u << 20;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// ---------------------------------------------------------------- daemon

Result<std::unique_ptr<Receiver>> Receiver::Start(ReceiverOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->opt = std::move(options);
  if (!impl->opt.discard || !impl->opt.root.empty()) {
    int root = ::open(impl->opt.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
      return Error(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                   "cannot open root directory " + impl->opt.root, errno);
    }
    impl->root = Fd(root);
  }
  impl->listener = FERRY_TRY(Listen(impl->opt.listen_addr, impl->opt.port));
  impl->port = FERRY_TRY(LocalPort(impl->listener.get()));
  Impl* raw = impl.get();
  impl->acceptor = std::thread([raw] { raw->AcceptLoop(); });
  return std::unique_ptr<Receiver>(new Receiver(std::move(impl)));
}

Receiver::Receiver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Receiver::~Receiver() {
  Stop();
}

uint16_t Receiver::port() const {
  return impl_->port;
}

void Receiver::Stop() {
  if (impl_->stopping.exchange(true)) {
    return;
  }
  if (impl_->acceptor.joinable()) {
    impl_->acceptor.join();
  }
  std::list<Impl::ConnThread> conns;
  {
    MutexLock lock(impl_->mu);
    for (auto& c : impl_->conns) {
      c.conn->Shutdown();
    }
    conns.splice(conns.end(), impl_->conns);
  }
  for (auto& c : conns) {
    if (c.thread.joinable()) {
      c.thread.join();
    }
  }
}

void Receiver::Impl::Log(const std::string& line) {
  if (opt.on_log) {
    MutexLock lock(log_mu);
    opt.on_log(line);
  }
}

void Receiver::Impl::AcceptLoop() {
  // Bounded: polls every 200 ms until Stop().
  while (!stopping.load()) {
    pollfd p{listener.get(), POLLIN, 0};
    int n = ::poll(&p, 1, 200);
    {
      MutexLock lock(mu);
      for (auto it = conns.begin(); it != conns.end();) {
        if (it->done.load()) {
          it->thread.join();
          it = conns.erase(it);
        } else {
          ++it;
        }
      }
    }
    DropIdlePools(false);
    if (n <= 0) {
      continue;
    }
    int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      continue;
    }
    auto conn = std::make_shared<Conn>(Fd(fd));
    int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    MutexLock lock(mu);
    if (static_cast<int>(conns.size()) >= opt.max_connections) {
      conn->Shutdown();
      continue;
    }
    conns.emplace_back();
    ConnThread& ct = conns.back();
    ct.conn = conn;
    ct.thread = std::thread([this, conn, &ct] {
      Serve(conn);
      ct.done.store(true);
    });
  }
}

void Receiver::Impl::Serve(const std::shared_ptr<Conn>& conn) {
  if (!conn->SetTimeouts(opt.timeout_ms, opt.timeout_ms)) {
    return;
  }
  std::string peer = conn->PeerName();
  auto hello = ServerHandshake(*conn, KeyBytes(opt.token));
  if (!hello) {
    if (hello.error().code() == ErrorCode::kPermission) {
      Log("refused " + peer + ": authentication failed");
      conn->FinishAndDrain(500);
    } else if (hello.error().message() != kClosedBeforeHello) {
      // Probes and foreign protocols (bad magic, truncated or garbled frames, timeouts) get one
      // line each: an admin watching the port must see them.
      Log("refused " + peer + ": " + hello.error().message());
    }
    return;
  }
  if (hello->role == Role::kControl) {
    auto session = std::make_shared<RecvSession>(*this, conn, *hello);
    session->RunControl();
    return;
  }
  std::shared_ptr<RecvSession> session = FindSession(hello->session);
  if (!session) {
    (void)conn->SendFrame({.type = FrameType::kError},
                          EncodeErrorMessage(ErrorCode::kNotFound, "no such session"));
    return;
  }
  session->RunData(conn);
}

std::shared_ptr<RecvSession> Receiver::Impl::FindSession(const SessionId& id) {
  // A data stream may finish its handshake before the control connection of its session did
  // (the sender opens them in parallel): wait a little for it (bounded: 2 s).
  for (int i = 0; i < 400 && !stopping.load(); ++i) {
    {
      MutexLock lock(mu);
      for (auto& [sid, weak] : sessions) {
        if (sid == id) {
          return weak.lock();
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return nullptr;
}

std::unique_ptr<BufferPool> Receiver::Impl::TakePool(size_t count, size_t buffer_size) {
  for (auto it = idle_pools.begin(); it != idle_pools.end(); ++it) {
    if (it->pool->buffer_size() == buffer_size && it->pool->count() == count) {
      std::unique_ptr<BufferPool> p = std::move(it->pool);
      idle_pools.erase(it);
      p->Reopen();
      return p;
    }
  }
  idle_pools.clear();  // another shape: give the memory back before mapping new
  return nullptr;
}

void Receiver::Impl::KeepPool(std::unique_ptr<BufferPool> pool) {
  MutexLock lock(mu);
  if (idle_pools.size() >= 2) {
    idle_pools.erase(idle_pools.begin());
  }
  idle_pools.push_back({std::move(pool), std::chrono::steady_clock::now()});
}

void Receiver::Impl::DropIdlePools(bool all) {
  MutexLock lock(mu);
  auto now = std::chrono::steady_clock::now();
  std::erase_if(idle_pools,
                [&](const IdlePool& p) { return all || now - p.since > std::chrono::seconds(60); });
}

bool Receiver::Impl::ClaimPath(const std::string& path) {
  MutexLock lock(mu);
  return active_paths.insert(path).second;
}

void Receiver::Impl::ReleasePath(const std::string& path) {
  MutexLock lock(mu);
  active_paths.erase(path);
}

// ---------------------------------------------------------------- session: control

RecvSession::RecvSession(Receiver::Impl& owner, std::shared_ptr<Conn> control, const Hello& hello)
    : owner_(owner), control_(std::move(control)), id_(hello.session) {
  short_id_ = DigestHex(hash::Xxh3(id_.data(), id_.size())).substr(0, 8);
  peer_ = control_->PeerName();
  start_ = std::chrono::steady_clock::now();
  Touch();
}

void RecvSession::Touch() {
  last_activity_ns_.store(NowNs(), std::memory_order_relaxed);
}

void RecvSession::SendControl(FrameType type, uint32_t file_id, std::span<const uint8_t> payload) {
  (void)control_->SendFrame({.type = type, .file_id = file_id}, payload);
}

void RecvSession::SendNotice(std::string_view text) {
  SendControl(FrameType::kNotice, 0,
              std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// cp's rule for `ferry send FILE HOST:PORT/NAME`: the file becomes NAME, or NAME/FILE when NAME
// is a directory here. Decided by the receiver, the only side that can look.
Status RecvSession::PlaceNamedFile(ManifestChunk& m) {
  if (m.total_files != 1 || m.entries.size() != 1 || m.source_name.empty()
      || m.source_name.find('/') != std::string::npos) {
    return CorruptionError("manifest: a named transfer must carry one file and its source name");
  }
  FERRY_TRY_CTX(ValidateRelativePath(m.source_name), "manifest source name");
  ManifestEntry& e = m.entries.front();
  FERRY_TRY_CTX(ValidateRelativePath(e.path), "manifest");
  if (OpenDirBeneath(owner_.root.get(), e.path, /*create=*/false)) {
    e.path += "/" + m.source_name;
  }
  return OkStatus();
}

Status RecvSession::ReadManifest() {
  uint32_t total = 0;
  bool have_first = false;
  // Bounded by the announced file count (at most 10M entries) and the socket timeouts.
  for (uint64_t frames = 0; frames < 20'000'000; ++frames) {
    FrameHeader h;
    auto payload = FERRY_TRY(control_->Expect(FrameType::kManifest, &h));
    ManifestChunk m = FERRY_TRY(DecodeManifest(payload));
    if (!have_first) {
      if (m.total_files > 10'000'000) {
        return InvalidArgumentError("manifest of more than 10 million files");
      }
      total = m.total_files;
      block_size_ = m.block_size;
      streams_ = m.streams;
      rate_bps_ = m.rate_bps;
      rtt_us_ = m.rtt_us;
      resume_ = (h.flags & kManifestResume) != 0;
      files_.reserve(total);
      have_first = true;
    } else if (m.total_files != total || m.block_size != block_size_) {
      return CorruptionError("manifest chunks disagree");
    }
    if (m.first_file_id != files_.size()) {
      return CorruptionError("manifest chunk out of order");
    }
    if ((h.flags & kManifestNamed) != 0) {
      FERRY_TRY(PlaceNamedFile(m));
    }
    for (ManifestEntry& e : m.entries) {
      FERRY_TRY_CTX(ValidateRelativePath(e.path), "manifest");
      if (SplitDirName(e.path).second.starts_with(".ferry-")) {
        return Error(ErrorCode::kPermission,
                     "manifest: name '" + e.path + "' uses the receiver's reserved prefix .ferry-");
      }
      RecvFile f;
      f.n_blocks = BlockCount(e.size, block_size_);
      auto [dir, name] = SplitDirName(e.path);
      f.dir = std::string(dir);
      f.name = std::string(name);
      f.entry = std::move(e);
      files_.push_back(std::move(f));
    }
    if ((h.flags & kManifestLast) != 0) {
      if (files_.size() != total) {
        return CorruptionError("manifest ended after " + std::to_string(files_.size()) + " of "
                               + std::to_string(total) + " files");
      }
      return OkStatus();
    }
  }
  return CorruptionError("manifest too long");
}

void RecvSession::LoadResume(RecvFile& f) {
  auto dir = OpenDirBeneath(owner_.root.get(), f.dir, /*create=*/false);
  if (!dir) {
    return;
  }
  // Already complete: same size and modification time as the source.
  struct stat st;
  if (::fstatat(dir->get(), f.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)
      && static_cast<uint64_t>(st.st_size) == f.entry.size
      && static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec
             == f.entry.mtime_ns) {
    f.state = RecvFile::State::kSkipped;
    return;
  }
  if (f.n_blocks < 2) {
    return;
  }
  if (::fstatat(dir->get(), PartName(f.name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0
      || !S_ISREG(st.st_mode)) {
    return;
  }
  JournalHeader want{f.entry.size, block_size_, f.entry.mtime_ns,
                     hash::Xxh3(f.entry.path.data(), f.entry.path.size())};
  auto blocks = Journal::Read(dir->get(), JournalName(f.name), want);
  if (!blocks) {
    if (blocks.error().code() != ErrorCode::kNotFound) {
      Log("not resuming " + f.entry.path + ": " + blocks.error().ToString());
    }
    return;
  }
  f.resumed = std::move(*blocks);
  f.resumable = true;
}

Status RecvSession::SendResumeState() {
  for (size_t i = 0; i < files_.size(); ++i) {
    RecvFile& f = files_[i];
    auto id = static_cast<uint32_t>(i);
    if (f.state == RecvFile::State::kSkipped) {
      FERRY_TRY(control_->SendFrame({.type = FrameType::kFileState,
                                     .flags = static_cast<uint16_t>(FileStateKind::kComplete),
                                     .file_id = id}));
      continue;
    }
    if (!f.resumable || f.resumed.empty()) {
      continue;
    }
    constexpr size_t kPerFrame = (kMaxControlPayload - 4) / 16;
    for (size_t at = 0; at < f.resumed.size(); at += kPerFrame) {
      size_t n = std::min(kPerFrame, f.resumed.size() - at);
      FERRY_TRY(control_->SendFrame(
          {.type = FrameType::kFileState,
           .flags = static_cast<uint16_t>(FileStateKind::kPartial),
           .file_id = id},
          EncodeBlockHashes(std::span<const BlockHash>(f.resumed).subspan(at, n))));
    }
  }
  return OkStatus();
}

void RecvSession::Register() {
  MutexLock lock(owner_.mu);
  owner_.sessions.emplace_back(id_, weak_from_this());
}

void RecvSession::Unregister() {
  MutexLock lock(owner_.mu);
  auto& v = owner_.sessions;
  v.erase(std::remove_if(v.begin(), v.end(), [&](auto& p) { return p.first == id_; }), v.end());
}

void RecvSession::SetReady(bool ready) {
  MutexLock lock(ready_mu_);
  ready_ = ready;
  finished_ = !ready;
  ready_cv_.NotifyAll();
}

void RecvSession::RunControl() {
  // Registered before the manifest arrives: the sender's data streams connect in parallel.
  Register();
  Status s = ReadManifest();
  if (!s) {
    RefuseManifest(s.error());
    return;
  }
  Announce(ClaimFiles());
  if (s = SendResumeState(); !s) {
    Teardown(s.error().ToString());
    return;
  }
  const size_t n_buffers = ReserveBuffers();
  if (n_buffers < 2) {
    Log("refused " + peer_ + ": the receiver's memory budget is in use by other sessions");
    SendControl(FrameType::kError, 0,
                EncodeErrorMessage(ErrorCode::kNoSpace,
                                   "receiver busy: its memory budget is in use, retry later"));
    Teardown("memory budget exhausted");
    return;
  }
  if (s = StartWriting(n_buffers); !s) {
    Teardown(s.error().ToString());
    return;
  }
  Teardown(ServeControl());
}

void RecvSession::RefuseManifest(const Error& e) {
  Log("refused " + peer_ + ": " + e.ToString());
  ErrorCode code =
      e.code() == ErrorCode::kPermission ? ErrorCode::kPermission : ErrorCode::kInvalidArgument;
  (void)control_->SendFrame({.type = FrameType::kError}, EncodeErrorMessage(code, e.ToString()));
  Unregister();
  closing_.store(true);
  SetReady(false);
  control_->FinishAndDrain(500);
}

// Each file's path claimed against the other sessions (a file another session receives fails
// here), and its resume state loaded.
uint64_t RecvSession::ClaimFiles() {
  uint64_t total_bytes = 0;
  for (size_t i = 0; i < files_.size(); ++i) {
    RecvFile& f = files_[i];
    total_bytes += f.entry.size;
    if (!owner_.ClaimPath(f.entry.path)) {
      f.state = RecvFile::State::kFailed;
      files_failed_.fetch_add(1);
      SendControl(FrameType::kFileError, static_cast<uint32_t>(i),
                  EncodeErrorMessage(ErrorCode::kPermission,
                                     f.entry.path + " is being received by another session"));
      continue;
    }
    f.claimed = true;
    if (resume_ && !owner_.opt.discard) {
      LoadResume(f);
    }
  }
  return total_bytes;
}

// The session in the log, and what the sender's user should know (discard mode, kernel
// buffers too small for the rate) as notices.
void RecvSession::Announce(uint64_t total_bytes) {
  Log("from " + peer_ + ": " + std::to_string(files_.size()) + " files, "
      + HumanBytes(static_cast<double>(total_bytes)) + ", " + std::to_string(streams_)
      + " streams, block " + HumanBytes(block_size_) + (resume_ ? ", resume" : ""));
  if (owner_.opt.discard) {
    SendNotice(
        "discarding: every block is verified and acknowledged, nothing is written (ferry recv "
        "--discard)");
  }
  for (const std::string& w :
       ReceiverBufferWarnings(rate_bps_, rtt_us_, streams_, ReadKernelBufferLimits())) {
    Log("warning: " + w);
    SendNotice(w);
  }
}

// Block buffers come out of one budget shared by all sessions; a session needs at least two.
// Each stream holds one or two while it receives; the others are the write queue and the
// writes in flight, which should reach the depth a fast disk needs (fio: 16 x 4 MiB) with
// room left to absorb a stalled write or a journal sync.
size_t RecvSession::ReserveBuffers() {
  size_t n_buffers = std::max<size_t>(static_cast<size_t>(std::max(streams_, 1)) * 2 + 4,
                                      kWriteBufferBytes / block_size_);
  MutexLock lock(owner_.mu);
  uint64_t left = owner_.opt.memory_budget > owner_.pool_bytes
                      ? owner_.opt.memory_budget - owner_.pool_bytes
                      : 0;
  n_buffers = std::min<size_t>(n_buffers, left / block_size_);
  if (n_buffers >= 2) {
    pool_bytes_ = n_buffers * block_size_;
    pool_bytes_total_ = pool_bytes_;
    owner_.pool_bytes += pool_bytes_;
  }
  return n_buffers;
}

// The buffer pool (an idle one reused), the write queue and the block I/O; then STATE_END,
// the writer thread, and the data streams let in.
Status RecvSession::StartWriting(size_t n_buffers) {
  {
    MutexLock lock(owner_.mu);
    pool_ = owner_.TakePool(n_buffers, block_size_);
  }
  if (!pool_) {
    pool_ = std::make_unique<BufferPool>(n_buffers, block_size_);
  }
  queue_ = std::make_unique<BoundedQueue<WriteItem>>(n_buffers);
  queue_->set_waker(&writer_waker_);
  slots_.resize(n_buffers);
  io_ = FERRY_TRY(BlockIo::Create(static_cast<unsigned>(n_buffers) + 16 + owner_.opt.queue_depth,
                                  owner_.opt.use_uring));
  // STATE_END goes out before the writer starts and the data streams are let in: the writer
  // finishes empty files at once, a stream's first block can finish a small one, and their
  // FILE_DONE must not overtake STATE_END on the control connection (the sender treats any
  // other frame before STATE_END as a protocol error).
  SendControl(FrameType::kStateEnd, 0, {});
  writer_ = std::thread([this] { WriterMain(); });
  SetReady(true);
  return OkStatus();
}

// Bounded: 500 ms per round; ends on BYE, on a broken connection, on Stop(), or after
// timeout_ms without any activity on the session.
std::string RecvSession::ServeControl() {
  while (true) {
    if (owner_.stopping.load()) {
      return "receiver stopping";
    }
    pollfd p{control_->fd(), POLLIN, 0};
    int n = ::poll(&p, 1, 500);
    if (n == 0) {
      int64_t idle_ns = NowNs() - last_activity_ns_.load(std::memory_order_relaxed);
      if (idle_ns > static_cast<int64_t>(owner_.opt.timeout_ms) * 1000000) {
        return "no activity for " + std::to_string(owner_.opt.timeout_ms / 1000) + " s";
      }
      continue;
    }
    auto h = control_->RecvHeader();
    if (!h) {
      return "control connection lost: " + h.error().ToString();
    }
    auto payload = control_->RecvPayload(*h);
    if (!payload) {
      return payload.error().ToString();
    }
    Touch();
    if (h->type == FrameType::kBye) {
      return {};
    }
    if (h->type == FrameType::kPing) {
      SendControl(FrameType::kPong, 0, *payload);
      continue;
    }
    return "unexpected " + std::string(FrameTypeName(h->type)) + " on the control connection";
  }
}

void RecvSession::Teardown(const std::string& error) {
  StopAndJoin();
  ReleaseResources();
  if (error.empty()) {
    SendControl(FrameType::kBye, 0, {});
  }
  const SessionSummary sum = Summarize(error);
  Log((error.empty() ? "done: " : "ended (" + error + "): ") + std::to_string(sum.files_done) + "/"
      + std::to_string(sum.files) + " files, " + HumanBytes(static_cast<double>(sum.bytes)) + " in "
      + std::to_string(sum.seconds).substr(0, 6) + " s"
      + (sum.bad_blocks > 0 ? ", " + std::to_string(sum.bad_blocks) + " damaged blocks re-sent"
                            : "")
      + ", digest " + DigestHex(sum.digest));
  if (owner_.opt.on_session) {
    MutexLock lock(owner_.log_mu);
    owner_.opt.on_session(sum);
  }
}

// Everything that runs for the session stops: readiness waiters, the queue and pool, the data
// streams (shut down), the writer (joined); the stream threads get a bounded wait to let go.
void RecvSession::StopAndJoin() {
  Unregister();
  {
    MutexLock lock(ready_mu_);
    finished_ = true;
    ready_cv_.NotifyAll();
  }
  closing_.store(true);
  if (queue_) {
    queue_->Close();
  }
  if (pool_) {
    pool_->Close();
  }
  {
    MutexLock lock(conns_mu_);
    for (auto& c : data_conns_) {
      c->Shutdown();
    }
  }
  writer_waker_.Wake();
  if (writer_.joinable()) {
    writer_.join();
  }
  // Wait (bounded) for the stream threads to let go of the session.
  for (int i = 0; i < 200; ++i) {
    {
      MutexLock lock(conns_mu_);
      if (data_conns_.empty()) {
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The paths claimed, the memory budget taken, and the buffer pool (kept for the next session
// when no stream holds a buffer any more).
void RecvSession::ReleaseResources() {
  for (RecvFile& f : files_) {
    if (f.claimed) {
      owner_.ReleasePath(f.entry.path);
      f.claimed = false;
    }
  }
  {
    MutexLock lock(owner_.mu);
    owner_.pool_bytes -= pool_bytes_;
    pool_bytes_ = 0;
  }
  bool streams_gone;
  {
    MutexLock lock(conns_mu_);
    streams_gone = data_conns_.empty();
  }
  if (pool_ && streams_gone && pool_->free_count() == pool_->count()) {
    owner_.KeepPool(std::move(pool_));
  }
}

SessionSummary RecvSession::Summarize(const std::string& error) {
  SessionSummary sum;
  sum.peer = peer_;
  sum.session = short_id_;
  sum.files = files_.size();
  sum.files_done = files_done_.load();
  sum.files_failed = files_failed_.load();
  std::vector<uint64_t> digests;
  for (const RecvFile& f : files_) {
    sum.files_skipped += f.state == RecvFile::State::kSkipped ? 1 : 0;
    digests.push_back(f.digest);
  }
  sum.digest = digests.size() == 1 ? digests[0] : SessionDigest(digests);
  sum.bytes = bytes_.load();
  sum.bad_blocks = bad_blocks_.load();
  sum.final_flush_max = final_flush_max_.load();
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  sum.streams = max_streams_seen_.load();
  sum.direct_io = direct_used_.load();
  sum.uring = io_ && io_->uses_uring();
  sum.error = error;
  const int streams = std::max(1, sum.streams);
  sum.stages = {st_wait_frame_.Snapshot("wait_frame", streams),
                st_buffer_wait_.Snapshot("buffer_wait", streams),
                st_socket_read_.Snapshot("socket_read", streams),
                st_hash_.Snapshot("hash", streams),
                st_queue_push_.Snapshot("queue_push", streams),
                st_queued_.Snapshot("write_queue"),
                st_write_submit_.Snapshot("write_submit"),
                st_write_.Snapshot("write"),
                st_fsync_.Snapshot("fsync"),
                st_ack_.Snapshot("ack"),
                st_writer_idle_.Snapshot("writer_idle")};
  const uint64_t buffers = pool_bytes_total_ / std::max<uint32_t>(block_size_, 1);
  sum.queues = {q_writes_.Snapshot("writes_inflight", buffers),
                q_free_buffers_.Snapshot("free_buffers", buffers),
                q_write_queue_.Snapshot("write_queue", buffers)};
  return sum;
}

// ---------------------------------------------------------------- session: data streams

void RecvSession::RunData(const std::shared_ptr<Conn>& conn) {
  if (!WaitReady() || !AddDataConn(conn)) {
    return;
  }
  const std::string error = ServeData(conn);
  if (!error.empty()) {
    Log("closing a data stream: " + error);
    (void)conn->SendFrame({.type = FrameType::kError},
                          EncodeErrorMessage(ErrorCode::kCorruption, error));
  }
  MutexLock lock(conns_mu_);
  data_conns_.erase(std::remove(data_conns_.begin(), data_conns_.end(), conn), data_conns_.end());
}

// Waits (bounded) until the manifest is in and the buffers exist; false if they never will.
bool RecvSession::WaitReady() {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(owner_.opt.timeout_ms);
  MutexLock lock(ready_mu_);
  while (!ready_ && !finished_) {
    if (!ready_cv_.WaitUntil(ready_mu_, deadline)) {
      break;
    }
  }
  return ready_;
}

// Counts the stream in (false once the session is closing).
bool RecvSession::AddDataConn(const std::shared_ptr<Conn>& conn) {
  MutexLock lock(conns_mu_);
  if (closing_.load()) {
    return false;
  }
  data_conns_.push_back(conn);
  int n = static_cast<int>(data_conns_.size());
  int seen = max_streams_seen_.load();
  while (n > seen && !max_streams_seen_.compare_exchange_weak(seen, n)) {
  }
  return true;
}

// Why a DATA frame does not fit the manifest; empty when it does.
std::string RecvSession::CheckDataFrame(const FrameHeader& h) const {
  if (h.file_id >= files_.size() || h.block >= files_[h.file_id].n_blocks
      || h.length != BlockLength(files_[h.file_id].entry.size, block_size_, h.block)) {
    return "DATA frame outside the manifest (file " + std::to_string(h.file_id) + ", block "
           + std::to_string(h.block) + ", " + std::to_string(h.length) + " bytes)";
  }
  return {};
}

// A block buffer, waiting for one at most timeout_ms; -1 if none came or the session closes.
int RecvSession::AcquireBuffer() {
  int buf = -1;
  for (int waited = 0; buf < 0 && !closing_.load() && waited < owner_.opt.timeout_ms;
       waited += 200) {
    buf = pool_->Acquire(200);
  }
  return buf;
}

// Bounded: 500 ms per idle round; ends when the session closes or the stream breaks (the
// sender re-sends what it lost), or on a protocol error, which it returns.
std::string RecvSession::ServeData(const std::shared_ptr<Conn>& conn) {
  PayloadHasher hasher;
  int64_t t = StageNowNs();
  while (!closing_.load()) {
    pollfd p{conn->fd(), POLLIN, 0};
    int n = ::poll(&p, 1, 500);
    if (n == 0) {
      continue;
    }
    auto hr = conn->RecvHeader();
    if (!hr) {
      break;  // the sender closed the stream or it broke; the sender re-sends what it lost
    }
    const FrameHeader h = *hr;
    t = st_wait_frame_.Since(t);
    Touch();
    if (h.type == FrameType::kPing) {
      auto payload = conn->RecvPayload(h);
      if (!payload) {
        break;
      }
      (void)conn->SendFrame({.type = FrameType::kPong}, *payload);
      continue;
    }
    if (h.type != FrameType::kData) {
      return "unexpected " + std::string(FrameTypeName(h.type)) + " on a data stream";
    }
    if (std::string bad = CheckDataFrame(h); !bad.empty()) {
      return bad;
    }
    q_free_buffers_.Add(pool_->free_count());
    const int buf = AcquireBuffer();
    if (buf < 0) {
      break;
    }
    t = st_buffer_wait_.Since(t);
    std::span<uint8_t> dest(pool_->data(buf), h.length);
    hasher.Reset();
    if (Status s = conn->RecvExactHashed(dest, hasher, kHashPiece); !s) {
      pool_->Release(buf);
      break;
    }
    t = st_socket_read_.Since(t);
    WriteItem item{buf, h.file_id, h.block, h.length, h.payload_hash, conn};
    uint64_t got = hasher.Digest();
    t = st_hash_.Since(t);
    if (got != h.payload_hash) {
      bad_blocks_.fetch_add(1);
      Log("block " + std::to_string(h.block) + " of " + files_[h.file_id].entry.path
          + " failed its checksum; asking for it again");
      pool_->Release(buf);
      (void)conn->SendFrame({.type = FrameType::kAck,
                             .flags = static_cast<uint16_t>(AckStatus::kBadChecksum),
                             .file_id = h.file_id,
                             .block = h.block});
      continue;
    }
    q_write_queue_.Add(queue_->size());
    item.t_ns = t;
    if (!queue_->Push(item, owner_.opt.timeout_ms)) {
      pool_->Release(buf);
      break;
    }
    t = st_queue_push_.Since(t);
  }
  return {};
}

}  // namespace ferry::xfer
