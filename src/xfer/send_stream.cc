// The sender's stream threads: one sending and one acknowledgement reader per TCP connection.
#include <poll.h>

#include <algorithm>
#include <thread>

#include "xfer/handshake.h"
#include "xfer/send_session.h"

namespace ferry::xfer {

void SendSession::KillStream(Stream& s, const std::string& why) {
  std::vector<Ticket> lost;
  {
    MutexLock lock(s.mu);
    if (s.dead) {
      return;
    }
    s.dead = true;
    for (const auto& [key, inflight] : s.unacked) {
      lost.push_back({static_cast<uint32_t>(key >> 40), key & ((1ull << 40) - 1)});
    }
    s.unacked.clear();
    if (s.conn) {
      s.conn->Shutdown();
    }
  }
  if (!stop_.load()) {
    s.gone.store(true);
    Notice("stream " + std::to_string(s.index) + " lost (" + why + "); "
           + std::to_string(lost.size()) + " unacknowledged blocks go to the other streams");
  }
  for (const Ticket& t : lost) {
    Requeue(t, true);
  }
}

void SendSession::Requeue(Ticket t, bool count_retransmit) {
  {
    MutexLock lock(mu_);
    SendFile& f = *files_[t.file];
    if (f.failed.load() || f.acked[t.block] != 0) {
      return;
    }
    retry_.push_back(t);
  }
  if (count_retransmit) {
    retransmits_.fetch_add(1);
  }
  reader_waker_.Wake();
}

void SendSession::OnAck(uint32_t file, uint64_t block, uint64_t hash, bool resumed) {
  MutexLock lock(mu_);
  SendFile& f = *files_[file];
  if (f.acked[block] != 0) {
    return;
  }
  f.acked[block] = 1;
  f.hashes[block] = hash;
  ++f.n_acked;
  uint64_t len = BlockLength(f.src->size, opt_.block_size, block);
  acked_bytes_ += len;
  if (resumed) {
    ++resumed_blocks_;
  } else {
    uint64_t before = new_bytes_;
    new_bytes_ += len;
    if (before < steady_lo_bytes_ && new_bytes_ >= steady_lo_bytes_) {
      steady_lo_ns_ = StageNowNs();
    }
    if (before < steady_hi_bytes_ && new_bytes_ >= steady_hi_bytes_) {
      steady_hi_ns_ = StageNowNs();
    }
  }
  if (f.n_acked == f.n_blocks) {
    ack_done_.push_back(file);
  }
}

int SendSession::LiveStreams() {
  int live = 0;
  for (auto& s : streams_) {
    live += s->up.load() && !s->gone.load() ? 1 : 0;
  }
  return live;
}

void SendSession::Pace(size_t bytes) {
  if (opt_.max_rate_bps == 0) {
    return;
  }
  std::chrono::steady_clock::time_point at;
  {
    MutexLock lock(pace_mu_);
    auto now = std::chrono::steady_clock::now();
    if (pace_next_ < now) {
      pace_next_ = now;
    }
    at = pace_next_;
    auto ns = static_cast<int64_t>(static_cast<double>(bytes) * 8e9
                                   / static_cast<double>(opt_.max_rate_bps));
    pace_next_ += std::chrono::nanoseconds(ns);
  }
  // Bounded: at most the time this block takes at the paced rate times the stream count.
  while (!stop_.load() && std::chrono::steady_clock::now() < at) {
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        at - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
  }
}

void SendSession::StartStream(Stream& s) {
  s.started = true;
  ++started_streams_;
  Stream* sp = &s;
  s.sender = std::thread([this, sp] { StreamMain(*sp); });
}

// Auto mode: when the open streams spend most of their busy time limited by their socket
// buffers (TCP_INFO), the path can take more than they can keep in flight: open more streams,
// up to the plan's maximum. Checked at most once a second, and not while new streams ramp up.
void SendSession::ScaleStreams() {
  if (opt_.streams > 0 || started_streams_ >= plan_.max_streams) {
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (now - last_scale_ < std::chrono::seconds(1)) {
    return;
  }
  {
    MutexLock lock(mu_);
    if (next_file_ >= files_.size()) {
      return;  // everything is read: more streams would only add to the tail
    }
  }
  std::vector<double> limited;
  int up = 0;
  for (auto& s : streams_) {
    if (!s->started || !s->up.load() || s->gone.load()) {
      continue;
    }
    ++up;
    int fd;
    {
      MutexLock lock(s->mu);
      fd = s->conn ? s->conn->fd() : -1;
    }
    TcpStats t = fd >= 0 ? ReadTcpStats(fd) : TcpStats{};
    if (t.valid && s->last_stats.valid && t.busy_us > s->last_stats.busy_us + 200000) {
      limited.push_back(static_cast<double>(t.buffer_limited_us - s->last_stats.buffer_limited_us)
                        / static_cast<double>(t.busy_us - s->last_stats.busy_us));
    }
    s->last_stats = t;
  }
  last_scale_ = now;
  if (limited.empty() || static_cast<int>(limited.size()) * 2 < up) {
    return;
  }
  std::nth_element(limited.begin(), limited.begin() + static_cast<long>(limited.size() / 2),
                   limited.end());
  if (limited[limited.size() / 2] < 0.5) {
    return;
  }
  int add = std::min(plan_.max_streams - started_streams_, std::max(2, started_streams_ / 2));
  Notice("adding " + std::to_string(add) + " streams: the " + std::to_string(started_streams_)
         + " open ones are limited by their socket buffers");
  for (int i = 0; i < add; ++i) {
    StartStream(*streams_[static_cast<size_t>(started_streams_)]);
  }
  // Give the new streams time to ramp up before judging again.
  last_scale_ = now + std::chrono::seconds(1);
}

void SendSession::StreamMain(Stream& s) {
  Result<std::unique_ptr<Conn>> conn = ConnectStream(s);
  if (!conn) {
    KillStream(s, "connect: " + conn.error().ToString());
    return;
  }
  if (AttachStream(s, std::move(*conn))) {
    SendBlocks(s);
  }
}

// The stream's connection: a stream added later connects now; one of the first connected
// with the control connection.
Result<std::unique_ptr<Conn>> SendSession::ConnectStream(Stream& s) {
  auto connect = [this] {
    return Conn::Connect(opt_.host, opt_.port, opt_.timeout_ms, plan_.send_buffer, 0,
                         opt_.congestion);
  };
  const bool early = s.early.valid();
  Result<std::unique_ptr<Conn>> conn = early ? s.early.Finish(opt_.timeout_ms) : connect();
  if (early && conn && plan_.send_buffer > 0) {
    // The plan came after the connect: its buffer size is set now.
    if (Status b = (*conn)->SetSendBuffer(plan_.send_buffer); !b) {
      conn = std::move(b).error();
    }
  }
  // An early connect that failed is tried once more (not after a timeout: it already waited
  // the whole timeout).
  if (early && !conn && conn.error().code() != ErrorCode::kTimeout) {
    conn = connect();
  }
  return conn;
}

// Publishes the connection, sends HELLO and AUTH and starts the stream's ACK reader. False
// when the session stops or the stream died (killed, with the reason).
bool SendSession::AttachStream(Stream& s, std::unique_ptr<Conn> conn) {
  {
    // Published before the handshake so that Shutdown() can interrupt it.
    MutexLock lock(s.mu);
    s.conn = std::move(conn);
    if (stop_.load()) {
      return false;
    }
  }
  {
    MutexLock lock(mu_);
    if (stream_congestion_.empty()) {
      stream_congestion_ = s.conn->CongestionControl();
    }
  }
  Hello hello;
  hello.role = Role::kData;
  hello.stream_index = static_cast<uint16_t>(s.index);
  hello.session = session_;
  if (Status r = RandomBytes(hello.client_nonce); !r) {
    KillStream(s, r.error().ToString());
    return false;
  }
  // Blocks follow AUTH at once; the ACK reader checks AUTH_OK before it believes any ACK (a
  // refused stream's blocks go to the others, as for any lost stream).
  auto hs = BeginClientHandshake(*s.conn, hello, KeyBytes(opt_.token));
  if (!hs) {
    KillStream(s, "handshake: " + hs.error().ToString());
    return false;
  }
  s.up.store(true);
  s.acker = std::thread([this, &s, pending = *hs] { AckMain(s, pending); });
  return true;
}

// Sends ready blocks until the session stops (queue closed) or the stream dies.
void SendSession::SendBlocks(Stream& s) {
  int64_t t = StageNowNs();
  // Bounded: ends when the session stops (queue closed) or the stream dies.
  while (!stop_.load()) {
    q_ready_.Add(ready_->size());
    auto item = ready_->Pop(200);
    t = st_wait_block_.Since(t);
    if (!item) {
      if (ready_->closed()) {
        break;
      }
      MutexLock lock(s.mu);
      if (s.dead) {
        break;
      }
      continue;
    }
    const ReadyBlock blk = *item;
    if (blk.avoid_stream == s.index && LiveStreams() > 1) {
      // An endgame copy of a block this stream already carries: leave it to another stream.
      if (!ready_->Push(blk, 200)) {
        ReleaseBlock(blk.buffer);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    SendFile& f = *files_[blk.file];
    if (f.failed.load()) {
      ReleaseBlock(blk.buffer);
      continue;
    }
    std::span<const uint8_t> payload(pool_->data(blk.buffer) + blk.offset, blk.length);
    uint64_t h = PayloadHash(payload);
    t = st_hash_.Since(t);
    if (blk.verify && h == blk.expected) {
      ReleaseBlock(blk.buffer);
      OnAck(blk.file, blk.block, h, /*resumed=*/true);
      continue;
    }
    Pace(blk.length);
    t = st_pace_.Since(t);
    {
      MutexLock lock(s.mu);
      if (s.dead) {
        ReleaseBlock(blk.buffer);
        Requeue({blk.file, blk.block}, false);
        break;
      }
      s.unacked[TicketKey(blk.file, blk.block)] = {h, std::chrono::steady_clock::now()};
    }
    FrameHeader head{.type = FrameType::kData,
                     .length = blk.length,
                     .file_id = blk.file,
                     .block = blk.block,
                     .payload_hash = h};
    Status st = s.conn->SendRaw(head, payload);
    t = st_send_.Since(t);
    ReleaseBlock(blk.buffer);
    if (!st) {
      KillStream(s, st.error().ToString());
      break;
    }
    s.bytes.fetch_add(blk.length);
    sent_bytes_.fetch_add(blk.length);
    blocks_sent_.fetch_add(1);
  }
}

void SendSession::AckMain(Stream& s, const PendingHandshake& pending) {
  if (Status st = FinishClientHandshake(*s.conn, pending, KeyBytes(opt_.token)); !st) {
    KillStream(s, "handshake: " + st.error().ToString());
    return;
  }
  auto last_ack = std::chrono::steady_clock::now();
  // Bounded: each wait is 200 ms; the loop ends on stop, on a dead stream, or when
  // acknowledgements stop for timeout_ms while blocks are outstanding.
  while (!stop_.load()) {
    pollfd p{s.conn->fd(), POLLIN, 0};
    int n = ::poll(&p, 1, 200);
    if (n == 0) {
      MutexLock lock(s.mu);
      if (s.dead) {
        return;
      }
      if (s.unacked.empty()) {
        last_ack = std::chrono::steady_clock::now();
        continue;
      }
      if (std::chrono::steady_clock::now() - last_ack
          < std::chrono::milliseconds(opt_.timeout_ms)) {
        continue;
      }
    }
    if (n <= 0) {
      KillStream(s, n == 0
                        ? "no acknowledgement for " + std::to_string(opt_.timeout_ms / 1000) + " s"
                        : "poll failed");
      return;
    }
    auto hr = s.conn->RecvHeader();
    if (!hr) {
      KillStream(s, hr.error().ToString());
      return;
    }
    const FrameHeader& h = *hr;
    if (h.type != FrameType::kAck) {
      std::string why = "unexpected " + std::string(FrameTypeName(h.type));
      if (h.type == FrameType::kError) {
        auto payload = s.conn->RecvPayload(h);
        why = payload ? DecodeErrorMessage(*payload, "receiver: ").ToString() : why;
      }
      KillStream(s, why);
      return;
    }
    last_ack = std::chrono::steady_clock::now();
    InFlight block;
    {
      MutexLock lock(s.mu);
      auto it = s.unacked.find(TicketKey(h.file_id, h.block));
      if (it == s.unacked.end()) {
        continue;  // a duplicate, or a block already moved to another stream
      }
      block = it->second;
      s.unacked.erase(it);
      auto ns = static_cast<double>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(last_ack - block.sent).count());
      s.ack_latency_ns = s.ack_latency_ns == 0 ? ns : 0.8 * s.ack_latency_ns + 0.2 * ns;
    }
    switch (static_cast<AckStatus>(h.flags)) {
      case AckStatus::kOk:
        OnAck(h.file_id, h.block, block.hash, /*resumed=*/false);
        break;
      case AckStatus::kBadChecksum:
        Notice("block " + std::to_string(h.block) + " of " + files_[h.file_id]->src->rel_path
               + " arrived damaged on stream " + std::to_string(s.index) + "; sending it again");
        Requeue({h.file_id, h.block}, true);
        break;
      case AckStatus::kFileFailed:
        break;  // the control connection carries the reason
    }
  }
}

// Endgame: once every block has been read and handed out, a block that waits for its ACK
// much longer than blocks usually do (its stream is slow, or stuck behind a lossy path) is sent
// once more on whichever stream is free; the first ACK wins, the receiver ignores the copy.
// Without it, the end of a transfer waits for the slowest stream to drain its queue.
void SendSession::Endgame() {
  {
    MutexLock lock(mu_);
    if (next_file_ < files_.size() || !retry_.empty()) {
      return;
    }
  }
  if (ready_->size() > 0) {
    return;
  }
  // "Usually": the median over the streams of each stream's typical ACK time, so that a few
  // slow streams do not raise the bar for themselves.
  std::vector<double> typical;
  for (auto& s : streams_) {
    MutexLock lock(s->mu);
    if (s->ack_latency_ns > 0) {
      typical.push_back(s->ack_latency_ns);
    }
  }
  if (typical.empty()) {
    return;
  }
  std::nth_element(typical.begin(), typical.begin() + static_cast<long>(typical.size() / 2),
                   typical.end());
  auto median = std::chrono::nanoseconds(static_cast<int64_t>(typical[typical.size() / 2]));
  auto threshold = std::max<std::chrono::nanoseconds>(
      3 * median, 2 * std::chrono::microseconds(rtt_us_) + std::chrono::milliseconds(100));
  auto now = std::chrono::steady_clock::now();
  std::vector<Ticket> stale;
  for (auto& s : streams_) {
    MutexLock lock(s->mu);
    for (const auto& [key, inflight] : s->unacked) {
      if (now - inflight.sent > threshold) {
        stale.push_back({static_cast<uint32_t>(key >> 40), key & ((1ull << 40) - 1), s->index});
      }
    }
  }
  size_t added = 0;
  {
    MutexLock lock(mu_);
    for (const Ticket& t : stale) {
      SendFile& f = *files_[t.file];
      if (f.failed.load() || f.acked[t.block] != 0
          || !duplicated_.insert(TicketKey(t.file, t.block)).second) {
        continue;
      }
      retry_.push_back(t);
      ++added;
    }
  }
  if (added > 0) {
    endgame_copies_.fetch_add(added);
    reader_waker_.Wake();
  }
}

}  // namespace ferry::xfer
