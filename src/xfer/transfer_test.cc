// Sender and receiver in one process on 127.0.0.1: odd sizes, trees of small files, tokens,
// hostile paths, and faults injected by a proxy (a stream reset, a flipped bit, a cut link
// followed by --resume). Labelled `concurrency` (threads; also run under TSan).
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "base/hash.h"
#include "testing/testing.h"
#include "xfer/fault_proxy.h"
#include "xfer/handshake.h"
#include "xfer/net.h"
#include "xfer/receiver.h"
#include "xfer/sender.h"
#include "xfer/test_files.h"

namespace ferry::xfer {
namespace {

namespace fs = std::filesystem;

// Every regular file under dir, by relative path.
std::map<std::string, std::vector<uint8_t>> Tree(const std::string& dir) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) {
      out[fs::relative(e.path(), dir).string()] = testing::ReadFile(e.path().string());
    }
  }
  return out;
}

uint64_t DigestOf(const std::vector<uint8_t>& bytes, uint32_t block) {
  std::vector<uint64_t> hashes;
  for (size_t at = 0; at < bytes.size(); at += block) {
    hashes.push_back(hash::Xxh3(bytes.data() + at, std::min<size_t>(block, bytes.size() - at)));
  }
  return FileDigest(bytes.size(), block, hashes);
}

class XferLoopback : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = tmp_.File("src");
    root_ = tmp_.File("root");
    fs::create_directories(src_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    if (rx_) {
      rx_->Stop();
    }
    if (HasFailure()) {  // the receiver's side of the story
      std::lock_guard lock(mu_);
      for (const std::string& line : logs_) {
        std::fprintf(stderr, "receiver: %s\n", line.c_str());
      }
    }
  }

  void StartReceiver(const std::string& token = "",
                     bool preallocate = true,
                     const std::function<void(ReceiverOptions&)>& tweak = {}) {
    ReceiverOptions o;
    o.preallocate = preallocate;
    o.listen_addr = "127.0.0.1";
    o.root = root_;
    o.token = token;
    o.timeout_ms = 5000;
    o.on_session = [this](const SessionSummary& s) {
      std::lock_guard lock(mu_);
      sessions_.push_back(s);
      cv_.notify_all();
    };
    o.on_log = [this](std::string_view line) {
      std::lock_guard lock(mu_);
      logs_.emplace_back(line);
      cv_.notify_all();
    };
    if (tweak) {
      tweak(o);
    }
    auto rx = Receiver::Start(o);
    ASSERT_TRUE(rx.has_value()) << rx.error().ToString();
    rx_ = std::move(*rx);
  }

  SessionSummary WaitSession(size_t n) {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(
        cv_.wait_for(lock, std::chrono::seconds(10), [&] { return sessions_.size() >= n; }));
    return sessions_.size() >= n ? sessions_[n - 1] : SessionSummary{};
  }

  SendOptions Options(uint16_t port, std::vector<std::string> paths) {
    SendOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    o.paths = std::move(paths);
    o.block_size = 64 * 1024;
    o.streams = 3;
    o.timeout_ms = 5000;
    return o;
  }

  void ExpectNoHiddenFiles() {
    for (const auto& e : fs::recursive_directory_iterator(root_)) {
      EXPECT_EQ(e.path().filename().string().rfind(".ferry-", 0), std::string::npos) << e.path();
    }
  }

  ferry::testing::TempDir tmp_;
  std::string src_;
  std::string root_;
  std::unique_ptr<Receiver> rx_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<SessionSummary> sessions_;
  std::vector<std::string> logs_;
};

TEST_F(XferLoopback, OddSizesArriveIdentical) {
  StartReceiver();
  const uint32_t block = 64 * 1024;
  std::vector<size_t> sizes = {0,
                               1,
                               4095,
                               4097,
                               block - 1,
                               block,
                               block + 1,
                               3 * block + 12345,
                               (1u << 20) + 7,
                               3 * (1u << 20) + 4095};
  std::vector<std::string> paths;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::string p = src_ + "/f" + std::to_string(i) + "_" + std::to_string(sizes[i]);
    testing::WriteFile(p, testing::RandomBytes(sizes[i], i + 1));
    paths.push_back(p);
  }
  SendOptions o = Options(rx_->port(), paths);
  o.dest = "in/here";
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->files_failed, 0u);
  EXPECT_EQ(r->bytes, r->total_bytes);
  EXPECT_EQ(r->retransmitted_blocks, 0u);
  auto want = Tree(src_);
  auto got = Tree(root_ + "/in/here");
  EXPECT_EQ(got, want);
  for (const FileResult& f : r->files) {
    auto bytes = testing::ReadFile(root_ + "/" + f.path);
    EXPECT_EQ(f.digest, DigestOf(bytes, block)) << f.path;
  }
  SessionSummary s = WaitSession(1);
  EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(s.files_done, sizes.size());
  EXPECT_EQ(s.digest, r->digest);
  // Modes and modification times travel too.
  struct stat a, b;
  ASSERT_EQ(::stat(paths[5].c_str(), &a), 0);
  ASSERT_EQ(::stat((root_ + "/in/here/f5_65536").c_str(), &b), 0);
  EXPECT_EQ(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
  EXPECT_EQ(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
  EXPECT_EQ(a.st_mode & 0777, b.st_mode & 0777);
  ExpectNoHiddenFiles();
}

TEST_F(XferLoopback, TreeOfManySmallFilesOverFewStreams) {
  StartReceiver();
  uint64_t seed = 7;
  for (int d = 0; d < 6; ++d) {
    std::string dir = src_ + "/tree/d" + std::to_string(d) + (d % 2 ? "/sub" : "");
    fs::create_directories(dir);
    for (int i = 0; i < 60; ++i) {
      size_t n = static_cast<size_t>((seed * 2654435761u) % 9000);
      testing::WriteFile(dir + "/f" + std::to_string(i), testing::RandomBytes(n, ++seed));
    }
  }
  SendOptions o = Options(rx_->port(), {src_ + "/tree"});
  o.streams = 2;
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->files.size(), 360u);
  EXPECT_EQ(r->files_failed, 0u);
  EXPECT_EQ(Tree(root_ + "/tree"), Tree(src_ + "/tree"));
  // Both streams carried files: the tree is pipelined, not sent one file per connection.
  ASSERT_EQ(r->stream_bytes.size(), 2u);
  EXPECT_GT(r->stream_bytes[0], 0u);
  EXPECT_GT(r->stream_bytes[1], 0u);
  ExpectNoHiddenFiles();
}

// The sender opens a long path's stream count together with the control connection; on
// loopback the plan wants fewer, and the connections it does not use close before HELLO
// without a trace: no error, no lost stream, no extra stream in the session.
TEST_F(XferLoopback, UnusedEarlyConnectionsCloseWithoutATrace) {
  StartReceiver();
  auto data = testing::RandomBytes(3u << 20, 12);
  testing::WriteFile(src_ + "/f.bin", data);
  SendOptions o = Options(rx_->port(), {src_ + "/f.bin"});
  o.streams = 0;  // planned from the RTT: loopback starts with 2
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->streams, 2);
  EXPECT_EQ(r->streams_lost, 0);
  SessionSummary s = WaitSession(1);
  EXPECT_EQ(s.streams, 2);
  EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(testing::ReadFile(root_ + "/f.bin"), data);
  std::lock_guard lock(mu_);
  for (const std::string& line : logs_) {
    EXPECT_EQ(line.find("refused"), std::string::npos) << line;
    EXPECT_EQ(line.find("fail"), std::string::npos) << line;
  }
}

// --discard: the network path without the disk. Every block is still verified (the digests
// match), the sender is told, and nothing at all is created under the root.
TEST_F(XferLoopback, DiscardVerifiesEveryBlockAndWritesNothing) {
  StartReceiver("", true, [&](ReceiverOptions& o) { o.discard = true; });
  const std::vector<size_t> sizes = {0, 1, 65536 * 3 + 17, 1u << 20};
  std::vector<std::vector<uint8_t>> data;
  fs::create_directories(src_ + "/d");
  for (size_t i = 0; i < sizes.size(); ++i) {
    data.push_back(testing::RandomBytes(sizes[i], 20 + i));
    testing::WriteFile(src_ + "/d/f" + std::to_string(i), data.back());
  }
  SendOptions o = Options(rx_->port(), {src_ + "/d"});
  std::vector<std::string> notices;
  o.on_notice = [&](std::string_view n) {
    notices.emplace_back(n);
  };
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->files_failed, 0u);
  ASSERT_EQ(r->files.size(), sizes.size());
  for (const auto& f : r->files) {
    size_t i = static_cast<size_t>(std::stoul(f.path.substr(f.path.rfind('f') + 1)));
    EXPECT_EQ(f.digest, DigestOf(data[i], o.block_size)) << f.path;
  }
  SessionSummary s = WaitSession(1);
  EXPECT_EQ(s.files_done, sizes.size());
  uint64_t total = 0;
  for (size_t n : sizes) {
    total += n;
  }
  EXPECT_EQ(s.bytes, total);
  bool told = false;
  for (const std::string& n : notices) {
    told = told || n.find("nothing is written") != std::string::npos;
  }
  EXPECT_TRUE(told) << ::testing::PrintToString(notices);
  EXPECT_TRUE(fs::is_empty(root_));
}

TEST_F(XferLoopback, WrongOrMissingTokenIsRefusedBeforeAnyWrite) {
  StartReceiver("the right secret");
  testing::WriteFile(src_ + "/f", testing::RandomBytes(1000, 1));
  SendOptions o = Options(rx_->port(), {src_ + "/f"});
  o.token = "a wrong secret";
  auto r = Send(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kPermission) << r.error().ToString();
  o.token = "";
  r = Send(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kPermission) << r.error().ToString();
  EXPECT_TRUE(fs::is_empty(root_));
  o.token = "the right secret";
  r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(testing::ReadFile(root_ + "/f"), testing::ReadFile(src_ + "/f"));
}

// --congestion: the data streams use the named TCP congestion control and the report says
// which; without it they use the system's; a name the kernel lacks fails before any byte.
TEST_F(XferLoopback, CongestionControlIsChosenAndReported) {
  StartReceiver();
  auto data = testing::RandomBytes(300000, 9);
  testing::WriteFile(src_ + "/f", data);
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string system_cc;
  std::getline(in, system_cc);
  SendOptions o = Options(rx_->port(), {src_ + "/f"});
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->congestion, system_cc);
  fs::remove(root_ + "/f");
  o.congestion = system_cc == "reno" ? "cubic" : "reno";  // reno is always built in
  r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->congestion, o.congestion);
  EXPECT_EQ(testing::ReadFile(root_ + "/f"), data);
  fs::remove(root_ + "/f");
  o.congestion = "no-such-cc";
  r = Send(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << r.error().ToString();
  EXPECT_NE(r.error().ToString().find("'no-such-cc' is not available here (available: "),
            std::string::npos)
      << r.error().ToString();
  EXPECT_TRUE(fs::is_empty(root_));
}

// Probes leave a trace: every connection that sends bytes that are not a ferry handshake (another
// protocol, garbage, a frame cut short) is refused with one log line naming the peer and why.
TEST_F(XferLoopback, EveryProbeIsLoggedWithPeerAndReason) {
  StartReceiver("secret");
  const std::vector<std::string> probes = {
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(40, ' '),  // another protocol
      std::string(200, '\0'),                                      // zero bytes
      "\x46\x45",                                                  // cut inside a header
  };
  const size_t rounds = 10;
  for (size_t i = 0; i < rounds; ++i) {
    for (const std::string& probe : probes) {
      auto conn = Conn::Connect("127.0.0.1", rx_->port(), 5000);
      ASSERT_TRUE(conn.has_value());
      ASSERT_EQ(::send((*conn)->fd(), probe.data(), probe.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(probe.size()));
      ::shutdown((*conn)->fd(), SHUT_WR);  // the truncated probe then reads as a close
    }
  }
  const size_t want = rounds * probes.size();
  std::unique_lock lock(mu_);
  auto refused = [&] {
    return static_cast<size_t>(std::count_if(logs_.begin(), logs_.end(), [](const std::string& l) {
      return l.rfind("refused 127.0.0.1", 0) == 0;
    }));
  };
  ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(20), [&] { return refused() >= want; }))
      << refused() << " of " << want << " probes logged";
  EXPECT_EQ(refused(), want);
  size_t magic = 0;
  size_t cut = 0;
  for (const std::string& l : logs_) {
    magic += l.find("bad frame magic") != std::string::npos ? 1u : 0u;
    cut += l.find("closed by peer after 2 of") != std::string::npos ? 1u : 0u;
  }
  EXPECT_EQ(magic, 2u * rounds);
  EXPECT_EQ(cut, rounds);
}

// A hand-made client (the real sender never produces such paths) offers hostile names.
TEST_F(XferLoopback, DotDotAndAbsolutePathsAreRefused) {
  StartReceiver();
  for (const char* evil : {"../escaped", "ok/../../escaped", "/tmp/escaped", "a//b"}) {
    auto conn = Conn::Connect("127.0.0.1", rx_->port(), 5000);
    ASSERT_TRUE(conn.has_value());
    Hello hello;
    ASSERT_TRUE(ClientHandshake(**conn, hello, {}).has_value());
    ManifestChunk m;
    m.block_size = 4096;
    m.streams = 1;
    m.total_files = 2;
    m.entries.push_back({10, 0, 0644, "fine"});
    m.entries.push_back({10, 0, 0644, evil});
    ASSERT_TRUE(
        (*conn)
            ->SendFrame({.type = FrameType::kManifest, .flags = kManifestLast}, EncodeManifest(m))
            .has_value());
    auto reply = (*conn)->Expect(FrameType::kStateEnd);
    ASSERT_FALSE(reply.has_value()) << evil;
    EXPECT_NE(reply.error().message().find("path"), std::string::npos) << reply.error().ToString();
  }
  EXPECT_TRUE(fs::is_empty(root_));
  EXPECT_FALSE(fs::exists(tmp_.File("escaped")));
  EXPECT_FALSE(fs::exists("/tmp/escaped"));
}

// Without preallocation a large file can take the space a small one needs. A hand-made client
// orders the blocks: five of a 16 MiB file fill most of a 6 MiB disk, then a 1.5 MiB file
// arrives. The receiver gives up the large file (it could not fit anyway) and the small one
// lands; before, the small file failed with ENOSPC and the large one failed after it.
TEST_F(XferLoopback, FullDiskGivesUpTheLargestFileSoASmallerOneFits) {
  root_ = tmp_.File("disk");
  testing::TmpfsMount mount(root_, "6m");
  if (!mount.ok()) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  }
  StartReceiver("", /*preallocate=*/false);
  constexpr uint32_t kBlock = 1u << 20;
  auto big = testing::RandomBytes(16u << 20, 5);
  auto small = testing::RandomBytes(kBlock + kBlock / 2, 6);
  SessionId session{};
  session[0] = 42;
  auto control = Conn::Connect("127.0.0.1", rx_->port(), 5000);
  ASSERT_TRUE(control.has_value());
  Hello hello;
  hello.session = session;
  ASSERT_TRUE(ClientHandshake(**control, hello, {}).has_value());
  ManifestChunk m;
  m.block_size = kBlock;
  m.streams = 1;
  m.total_files = 2;
  m.entries.push_back({big.size(), 0, 0644, "big"});
  m.entries.push_back({small.size(), 0, 0644, "small"});
  ASSERT_TRUE(
      (*control)
          ->SendFrame({.type = FrameType::kManifest, .flags = kManifestLast}, EncodeManifest(m))
          .has_value());
  ASSERT_TRUE((*control)->Expect(FrameType::kStateEnd).has_value());
  auto data = Conn::Connect("127.0.0.1", rx_->port(), 5000);
  ASSERT_TRUE(data.has_value());
  hello.role = Role::kData;
  ASSERT_TRUE(ClientHandshake(**data, hello, {}).has_value());
  auto send = [&](uint32_t file, uint64_t block, const std::vector<uint8_t>& bytes) {
    size_t at = block * kBlock;
    std::span<const uint8_t> p(bytes.data() + at, std::min<size_t>(kBlock, bytes.size() - at));
    ASSERT_TRUE((*data)
                    ->SendFrame({.type = FrameType::kData, .file_id = file, .block = block}, p)
                    .has_value());
  };
  // Each block waits for its ACK, so the receiver sees them in this order.
  std::vector<AckStatus> acks;
  auto ack = [&] {
    auto h = (*data)->RecvHeader();
    ASSERT_TRUE(h.has_value()) << h.error().ToString();
    ASSERT_EQ(h->type, FrameType::kAck);
    acks.push_back(static_cast<AckStatus>(h->flags));
  };
  for (uint64_t b = 0; b < 5; ++b) {
    send(0, b, big);
    ack();
  }
  send(1, 0, small);
  ack();
  send(1, 1, small);
  ack();
  EXPECT_EQ(std::count(acks.begin(), acks.end(), AckStatus::kOk), 7) << "small's ACKs";
  std::string big_error;
  bool small_done = false;
  // Bounded: at most 8 frames, each within the connection's 5 s timeout.
  for (int i = 0; i < 8 && !(small_done && !big_error.empty()); ++i) {
    FrameHeader h;
    auto r = (*control)->RecvHeader();
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    auto payload = (*control)->RecvPayload(*r);
    ASSERT_TRUE(payload.has_value());
    h = *r;
    if (h.type == FrameType::kFileError && h.file_id == 0) {
      big_error = DecodeErrorMessage(*payload, "").ToString();
    } else if (h.type == FrameType::kFileDone) {
      EXPECT_EQ(h.file_id, 1u);
      small_done = true;
    }
  }
  EXPECT_TRUE(small_done);
  EXPECT_NE(big_error.find("disk is full"), std::string::npos) << big_error;
  EXPECT_NE(big_error.find("small"), std::string::npos) << big_error;
  EXPECT_EQ(testing::ReadFile(root_ + "/small"), small);
  EXPECT_FALSE(fs::exists(root_ + "/big"));
  ExpectNoHiddenFiles();  // the large file's partial data is gone, not kept for --resume
  (*control)->Shutdown();
  (*data)->Shutdown();
}

TEST_F(XferLoopback, SyncsComeCloserInAFilesLastStretch) {
  // On a tmpfs every datasync completes at once, so what the final fsync has left is decided
  // by when the syncs are queued, not by the disk's speed.
  root_ = tmp_.File("mem");
  testing::TmpfsMount mount(root_, "64m");
  if (!mount.ok()) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  }
  constexpr uint64_t kSyncBytes = 16u << 20;
  StartReceiver("", true, [&](ReceiverOptions& o) {
    o.journal_sync_bytes = kSyncBytes;
    o.journal_sync_ms = 600000;  // only bytes make a sync due
  });
  // 24 MiB: one sync after 16 MiB would leave 8 MiB for the final fsync; in the last 16 MiB
  // a sync is due every 2 MiB.
  auto data = testing::RandomBytes(24u << 20, 11);
  testing::WriteFile(src_ + "/f.bin", data);
  SendOptions o = Options(rx_->port(), {src_ + "/f.bin"});
  o.block_size = 1u << 20;
  o.max_rate_bps = 200'000'000;  // blocks complete one by one, 40 ms apart
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  SessionSummary s = WaitSession(1);
  EXPECT_EQ(s.files_done, 1u);
  EXPECT_EQ(testing::ReadFile(root_ + "/f.bin"), data);
  EXPECT_LE(s.final_flush_max, kSyncBytes / 8 + 2 * o.block_size);
}

TEST_F(XferLoopback, OneStreamCutMidTransferOthersFinish) {
  StartReceiver();
  auto data = testing::RandomBytes(12u << 20, 3);
  testing::WriteFile(src_ + "/big", data);
  // Connection 1 is the first data stream: reset it in the middle of its first block. Paced,
  // so that every stream is up and busy before the file is through.
  testing::FaultProxy proxy(rx_->port(), {{1, 1, testing::FaultProxy::kNever, 100u << 10}});
  SendOptions o = Options(proxy.port(), {src_ + "/big"});
  o.block_size = 256 * 1024;
  o.max_rate_bps = 400'000'000;
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(proxy.cuts(), 1);
  EXPECT_EQ(r->streams_lost, 1);
  EXPECT_GE(r->retransmitted_blocks, 1u);
  EXPECT_EQ(r->files_failed, 0u);
  EXPECT_EQ(testing::ReadFile(root_ + "/big"), data);
  EXPECT_EQ(r->digest, DigestOf(data, o.block_size));
}

TEST_F(XferLoopback, ASlowStreamDoesNotHoldTheOthersBack) {
  StartReceiver();
  auto data = testing::RandomBytes(24u << 20, 6);
  testing::WriteFile(src_ + "/big", data);
  // Connection 1 (a data stream) crawls at 2 MB/s; the others are not limited.
  testing::FaultProxy::Rule slow{1, 1, testing::FaultProxy::kNever, testing::FaultProxy::kNever,
                                 2'000'000};
  testing::FaultProxy proxy(rx_->port(), {slow});
  SendOptions o = Options(proxy.port(), {src_ + "/big"});
  o.block_size = 256 * 1024;
  o.timeout_ms = 20000;
  o.max_rate_bps = 800'000'000;  // every stream is up and busy long before the end
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(testing::ReadFile(root_ + "/big"), data);
  // The transfer did not wait for the slow stream: it ended while blocks the sender had queued
  // on it were still on their way (their copies went over the fast streams).
  uint64_t least = *std::min_element(r->stream_bytes.begin(), r->stream_bytes.end());
  EXPECT_GT(least, proxy.forwarded(1)) << "the slow stream delivered everything it was given";
  EXPECT_GT(r->endgame_copies, 0u);
}

TEST_F(XferLoopback, FlippedBitInTransitIsDetectedAndResent) {
  StartReceiver();
  auto data = testing::RandomBytes(4u << 20, 4);
  testing::WriteFile(src_ + "/big", data);
  // Data streams open with HELLO (40 + 56 bytes) and AUTH (40 + 32); the first DATA payload
  // starts at byte 208. Flip a bit 1000 bytes into it, on every data stream.
  testing::FaultProxy proxy(rx_->port(), {{1, 3, 208 + 1000, testing::FaultProxy::kNever}});
  SendOptions o = Options(proxy.port(), {src_ + "/big"});
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_GE(proxy.flips(), 1);
  EXPECT_EQ(r->retransmitted_blocks, static_cast<uint64_t>(proxy.flips()));
  EXPECT_EQ(r->streams_lost, 0);
  EXPECT_EQ(testing::ReadFile(root_ + "/big"), data);
  SessionSummary s = WaitSession(1);
  EXPECT_EQ(s.bad_blocks, static_cast<uint64_t>(proxy.flips()));
}

TEST_F(XferLoopback, ResumeAfterTheLinkDiesSendsOnlyMissingBlocks) {
  StartReceiver();
  auto data = testing::RandomBytes(8u << 20, 5);
  testing::WriteFile(src_ + "/big", data);
  SendOptions o = Options(0, {src_ + "/big"});
  {
    // Everything stops after ~40% of the bytes. Paced to 4 MB/s (the cut comes ~0.9 s in), so a
    // loaded machine's receiver has taken in blocks before the link dies: a reset discards what
    // still sits in its socket buffers.
    testing::FaultProxy proxy(rx_->port(), {}, 3400u * 1024);
    o.port = proxy.port();
    o.max_rate_bps = 32'000'000;
    auto r = Send(o);
    ASSERT_FALSE(r.has_value());
    o.max_rate_bps = 0;
  }
  SessionSummary first = WaitSession(1);
  EXPECT_FALSE(first.error.empty());
  EXPECT_FALSE(fs::exists(root_ + "/big"));  // never renamed into place while partial
  o.port = rx_->port();
  o.resume = true;
  auto r = Send(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->files_failed, 0u);
  EXPECT_GT(r->resumed_blocks, 0u);
  EXPECT_LT(r->sent_bytes, data.size());
  // Every block went exactly once: resumed, or sent (copies for damage, loss or the endgame
  // aside).
  EXPECT_EQ(r->blocks_sent - r->retransmitted_blocks - r->endgame_copies + r->resumed_blocks,
            data.size() / o.block_size);
  EXPECT_EQ(testing::ReadFile(root_ + "/big"), data);
  EXPECT_EQ(r->digest, DigestOf(data, o.block_size));
  EXPECT_EQ(WaitSession(2).digest, r->digest);
  ExpectNoHiddenFiles();
  // A second --resume finds the file complete and sends nothing.
  auto again = Send(o);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->files_skipped, 1u);
  EXPECT_EQ(again->sent_bytes, 0u);
}

TEST_F(XferLoopback, ConcurrentSessionsToOneReceiver) {
  StartReceiver("tok");
  auto a = testing::RandomBytes(3u << 20, 8);
  auto b = testing::RandomBytes(2u << 20, 9);
  testing::WriteFile(src_ + "/a", a);
  testing::WriteFile(src_ + "/b", b);
  SendOptions oa = Options(rx_->port(), {src_ + "/a"});
  SendOptions ob = Options(rx_->port(), {src_ + "/b"});
  oa.token = ob.token = "tok";
  Result<SendReport> ra = Error(ErrorCode::kIo, "not run");
  std::thread t([&] { ra = Send(oa); });
  auto rb = Send(ob);
  t.join();
  ASSERT_TRUE(ra.has_value()) << ra.error().ToString();
  ASSERT_TRUE(rb.has_value()) << rb.error().ToString();
  EXPECT_EQ(testing::ReadFile(root_ + "/a"), a);
  EXPECT_EQ(testing::ReadFile(root_ + "/b"), b);
}

}  // namespace
}  // namespace ferry::xfer
