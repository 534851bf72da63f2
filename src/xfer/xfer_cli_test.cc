// `ferry send` / `ferry recv` as processes: a receiver killed with SIGKILL and resumed, a full
// disk (a small tmpfs), tokens and hostile destinations through the CLI, and a transfer between
// two network namespaces made by the test (fxf-*) with one TCP stream destroyed mid-transfer.
// Labelled `integration`; parts that need root, mounts or namespaces skip without them.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "base/hash.h"
#include "testing/testing.h"
#include "xfer/journal.h"
#include "xfer/protocol.h"
#include "xfer/test_files.h"

#include <nlohmann/json.hpp>

extern char** environ;

namespace ferry::xfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A child process with stdout/stderr in files; killed and reaped by the destructor.
class Proc {
 public:
  Proc(const std::vector<std::string>& argv, const std::string& out, const std::string& err)
      : out_(out), err_(err) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (const std::string& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    if (posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Proc() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      Wait(5000);
    }
  }
  // Exit code, 128+signal, or -1 after timeout_ms.
  int Wait(int timeout_ms) {
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  void Kill(int sig) { ::kill(pid_, sig); }
  std::string out() const { return Slurp(out_); }
  std::string err() const { return Slurp(err_); }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string out_;
  std::string err_;
};

std::string Ferry() {
  return FERRY_BINARY;
}

int Sh(const std::string& cmd) {
  int rc = std::system(("timeout 20 " + cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

uint64_t DigestOf(const std::vector<uint8_t>& bytes, uint32_t block) {
  std::vector<uint64_t> hashes;
  for (size_t at = 0; at < bytes.size(); at += block) {
    hashes.push_back(hash::Xxh3(bytes.data() + at, std::min<size_t>(block, bytes.size() - at)));
  }
  return FileDigest(bytes.size(), block, hashes);
}

bool HasHiddenPart(const std::string& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().ends_with(".part")) {
      return true;
    }
  }
  return false;
}

// Blocks recorded in the resume journals under `dir` (every record names a block already on
// disk: journal.h).
uint64_t JournalRecords(const std::string& dir) {
  uint64_t records = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    const uint64_t size = e.is_regular_file(ec) ? e.file_size(ec) : 0;
    if (!ec && e.path().filename().string().ends_with(".journal") && size > kJournalHeaderSize) {
      records += (size - kJournalHeaderSize) / kJournalRecordSize;
    }
  }
  return records;
}

class XferCli : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = tmp_.File("src");
    root_ = tmp_.File("root");
    fs::create_directories(src_);
    fs::create_directories(root_);
    token_ = tmp_.File("token");
    std::ofstream(token_) << "correct horse battery staple\n";
  }

  // Starts `ferry recv` (inside `netns` when given) and returns its port.
  std::unique_ptr<Proc> StartRecv(const std::string& addr,
                                  const std::string& root,
                                  int* port,
                                  std::vector<std::string> extra = {},
                                  const std::string& netns = "") {
    std::vector<std::string> argv;
    if (!netns.empty()) {
      argv = {"ip", "netns", "exec", netns};
    }
    std::vector<std::string> cmd = {Ferry(),        "recv", "--listen", addr + ":0", "--root", root,
                                    "--token-file", token_, "--json",   "--timeout", "5"};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::string tag = std::to_string(++procs_);
    auto p = std::make_unique<Proc>(argv, tmp_.File("recv" + tag + ".out"),
                                    tmp_.File("recv" + tag + ".err"));
    *port = 0;
    // Up to 30 s: a loaded machine (a parallel build, tests at -j) can take seconds to start it.
    for (int i = 0; i < 1500 && *port == 0; ++i) {
      std::string out = p->out();
      size_t nl = out.find('\n');
      if (nl != std::string::npos) {
        *port = json::parse(out.substr(0, nl)).value("port", 0);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    return p;
  }

  std::unique_ptr<Proc> StartSend(std::vector<std::string> args, const std::string& netns = "") {
    std::vector<std::string> argv;
    if (!netns.empty()) {
      argv = {"ip", "netns", "exec", netns};
    }
    argv.push_back(Ferry());
    argv.push_back("send");
    argv.insert(argv.end(), args.begin(), args.end());
    std::string tag = std::to_string(++procs_);
    return std::make_unique<Proc>(argv, tmp_.File("send" + tag + ".out"),
                                  tmp_.File("send" + tag + ".err"));
  }

  ferry::testing::TempDir tmp_;
  std::string src_;
  std::string root_;
  std::string token_;
  int procs_ = 0;
};

// cp's naming: one FILE sent to HOST:PORT/NAME arrives as NAME; NAME/ and an existing directory
// NAME receive NAME/FILE.
TEST_F(XferCli, OneFileIsNamedLikeCp) {
  auto data = testing::RandomBytes(100000, 21);
  testing::WriteFile(src_ + "/f.bin", data);
  fs::create_directories(root_ + "/existing");
  int port = 0;
  auto rx = StartRecv("127.0.0.1", root_, &port);
  ASSERT_GT(port, 0) << rx->err();
  const std::string to = "127.0.0.1:" + std::to_string(port);
  struct Case {
    std::string target;
    std::string arrives;
  };
  const std::vector<Case> cases = {{"/renamed.bin", "/renamed.bin"},
                                   {"/sub/renamed.bin", "/sub/renamed.bin"},
                                   {"/newdir/", "/newdir/f.bin"},
                                   {"/existing", "/existing/f.bin"}};
  for (const Case& c : cases) {
    auto tx = StartSend({src_ + "/f.bin", to + c.target, "--token-file", token_});
    ASSERT_EQ(tx->Wait(20000), 0) << c.target << ": " << tx->err();
    EXPECT_EQ(testing::ReadFile(root_ + c.arrives), data) << c.target;
  }
  EXPECT_FALSE(fs::exists(root_ + "/renamed.bin/f.bin"));
  EXPECT_TRUE(fs::is_regular_file(root_ + "/renamed.bin"));
  // Two sources: NAME is always the directory they arrive in.
  testing::WriteFile(src_ + "/g.bin", data);
  auto tx = StartSend({src_ + "/f.bin", src_ + "/g.bin", to + "/pair", "--token-file", token_});
  ASSERT_EQ(tx->Wait(20000), 0) << tx->err();
  EXPECT_EQ(testing::ReadFile(root_ + "/pair/g.bin"), data);
  rx->Kill(SIGTERM);
  EXPECT_EQ(rx->Wait(5000), 0);
}

TEST_F(XferCli, ReceiverKilledMidTransferThenResumeSendsOnlyMissingBlocks) {
  const uint32_t block = 1u << 20;
  auto data = testing::RandomBytes(40u << 20, 11);
  testing::WriteFile(src_ + "/big.bin", data);
  int port = 0;
  auto rx = StartRecv("127.0.0.1", root_, &port, {"--journal-sync-ms", "50"});
  ASSERT_GT(port, 0) << rx->err();
  // Paced to 20 MB/s (2 s for the file) so the receiver dies in the middle: as soon as its
  // journal records a few blocks, which the resume below must find.
  auto tx = StartSend({src_ + "/big.bin", "127.0.0.1:" + std::to_string(port) + "/d/",
                       "--token-file", token_, "--block-size", "1M", "--streams", "4", "--max-rate",
                       "160M", "--timeout", "5", "--json"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (JournalRecords(root_) < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(JournalRecords(root_), 4u) << "no journal records within 20 s: " << rx->err();
  rx->Kill(SIGKILL);
  EXPECT_EQ(rx->Wait(5000), 128 + SIGKILL);
  EXPECT_EQ(tx->Wait(20000), 1) << tx->err();
  EXPECT_NE(tx->err().find("--resume"), std::string::npos) << tx->err();
  EXPECT_FALSE(fs::exists(root_ + "/d/big.bin"));
  EXPECT_TRUE(HasHiddenPart(root_));

  auto rx2 = StartRecv("127.0.0.1", root_, &port);
  ASSERT_GT(port, 0);
  auto tx2 =
      StartSend({src_ + "/big.bin", "127.0.0.1:" + std::to_string(port) + "/d/", "--token-file",
                 token_, "--block-size", "1M", "--streams", "4", "--resume", "--json"});
  ASSERT_EQ(tx2->Wait(30000), 0) << tx2->err();
  json r = json::parse(tx2->out());
  uint64_t resumed = r["resumed_blocks"];
  uint64_t sent = r["sent_bytes"];
  EXPECT_GT(resumed, 0u);
  EXPECT_LT(sent, data.size());
  uint64_t copies = r["retransmitted_blocks"].get<uint64_t>() + r["endgame_copies"].get<uint64_t>();
  EXPECT_EQ(r["blocks_sent"].get<uint64_t>() - copies + resumed, data.size() / block);
  EXPECT_EQ(r["digest"], DigestHex(DigestOf(data, block)));
  EXPECT_EQ(testing::ReadFile(root_ + "/d/big.bin"), data);
  EXPECT_FALSE(HasHiddenPart(root_));
  rx2->Kill(SIGTERM);
  EXPECT_EQ(rx2->Wait(5000), 0);
  // The receiver reports the same digest.
  std::string log = rx2->out();
  EXPECT_NE(log.find("\"digest\":\"" + DigestHex(DigestOf(data, block)) + "\""), std::string::npos)
      << log;
}

TEST_F(XferCli, WrongTokenAndEscapingDestinationAreRefusedAndNothingIsWritten) {
  testing::WriteFile(src_ + "/f", testing::RandomBytes(5000, 2));
  int port = 0;
  auto rx = StartRecv("127.0.0.1", root_, &port);
  ASSERT_GT(port, 0);
  std::string bad = tmp_.File("bad-token");
  std::ofstream(bad) << "wrong";
  auto tx = StartSend({src_ + "/f", "127.0.0.1:" + std::to_string(port), "--token-file", bad});
  EXPECT_EQ(tx->Wait(10000), 1);
  EXPECT_NE(tx->err().find("refused the token"), std::string::npos) << tx->err();
  auto tx2 = StartSend(
      {src_ + "/f", "127.0.0.1:" + std::to_string(port) + "/../escape", "--token-file", token_});
  EXPECT_NE(tx2->Wait(10000), 0);
  EXPECT_NE(tx2->err().find(".."), std::string::npos) << tx2->err();
  EXPECT_TRUE(fs::is_empty(root_));
  EXPECT_FALSE(fs::exists(tmp_.File("escape")));
  EXPECT_NE(rx->err().find("authentication failed"), std::string::npos) << rx->err();
}

TEST_F(XferCli, DiscardReceiverVerifiesWritesNothingAndTellsTheSender) {
  auto data = testing::RandomBytes((3u << 20) + 123, 4);
  testing::WriteFile(src_ + "/f.bin", data);
  int port = 0;
  auto rx = StartRecv("127.0.0.1", root_, &port, {"--discard"});
  ASSERT_GT(port, 0) << rx->err();
  EXPECT_NE(rx->out().find("\"discard\":true"), std::string::npos) << rx->out();
  auto tx = StartSend({src_ + "/f.bin", "127.0.0.1:" + std::to_string(port), "--token-file", token_,
                       "--block-size", "1M", "--json"});
  ASSERT_EQ(tx->Wait(20000), 0) << tx->err();
  json r = json::parse(tx->out());
  EXPECT_EQ(r["digest"], DigestHex(DigestOf(data, 1u << 20)));
  EXPECT_NE(r["notices"].dump().find("nothing is written"), std::string::npos) << r.dump();
  rx->Kill(SIGTERM);
  EXPECT_EQ(rx->Wait(5000), 0);
  EXPECT_NE(rx->out().find("\"digest\":\"" + DigestHex(DigestOf(data, 1u << 20)) + "\""),
            std::string::npos)
      << rx->out();
  EXPECT_TRUE(fs::is_empty(root_));
}

TEST_F(XferCli, FullDiskGivesAClearErrorAndTheFileIsNeverRenamedIntoPlace) {
  std::string disk = tmp_.File("disk");
  testing::TmpfsMount mount(disk, "6m");
  if (!mount.ok()) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  }
  testing::WriteFile(src_ + "/big.bin", testing::RandomBytes(16u << 20, 3));
  testing::WriteFile(src_ + "/small.bin", testing::RandomBytes(100000, 4));
  for (bool prealloc : {true, false}) {
    SCOPED_TRACE(prealloc ? "preallocated" : "write path");
    int port = 0;
    std::vector<std::string> extra;
    if (!prealloc) {
      extra.push_back("--no-preallocate");
    }
    auto rx = StartRecv("127.0.0.1", disk, &port, extra);
    ASSERT_GT(port, 0);
    auto tx =
        StartSend({src_ + "/small.bin", src_ + "/big.bin", "127.0.0.1:" + std::to_string(port),
                   "--token-file", token_, "--block-size", "1M", "--json"});
    EXPECT_EQ(tx->Wait(20000), 1) << tx->err();
    EXPECT_NE(tx->err().find("big.bin"), std::string::npos) << tx->err();
    EXPECT_NE(tx->err().find("space"), std::string::npos) << tx->err();
    EXPECT_FALSE(fs::exists(disk + "/big.bin"));
    // The file that fits still arrives.
    ASSERT_TRUE(fs::exists(disk + "/small.bin")) << tx->err();
    EXPECT_EQ(testing::ReadFile(disk + "/small.bin"), testing::ReadFile(src_ + "/small.bin"));
    json r = json::parse(tx->out());
    EXPECT_EQ(r["files_failed"], 1);
    rx->Kill(SIGTERM);
    EXPECT_EQ(rx->Wait(5000), 0);
    fs::remove(disk + "/small.bin");
  }
}

// Two namespaces joined by a veth pair with a tbf rate limit; removed by the destructor.
class Namespaces {
 public:
  Namespaces() {
    std::string tag = std::to_string(::getpid() % 100000);
    a_ = "fxf-" + tag + "a";
    b_ = "fxf-" + tag + "b";
    int net = static_cast<int>(::getpid() % 200) + 20;
    ip_a_ = "10.213." + std::to_string(net) + ".1";
    ip_b_ = "10.213." + std::to_string(net) + ".2";
    ok_ = Sh("ip netns add " + a_) == 0 && Sh("ip netns add " + b_) == 0 &&
          Sh("ip link add fxfva netns " + a_ + " type veth peer name fxfvb netns " + b_) == 0 &&
          Sh("ip -n " + a_ + " addr add " + ip_a_ + "/24 dev fxfva") == 0 &&
          Sh("ip -n " + b_ + " addr add " + ip_b_ + "/24 dev fxfvb") == 0 &&
          Sh("ip -n " + a_ + " link set fxfva up") == 0 &&
          Sh("ip -n " + b_ + " link set fxfvb up") == 0 &&
          Sh("ip -n " + a_ + " link set lo up") == 0 && Sh("ip -n " + b_ + " link set lo up") == 0 &&
          Sh("ip netns exec " + a_ + " tc qdisc add dev fxfva root tbf rate 400mbit burst 256kb "
             "latency 20ms") == 0 &&
          Sh("ip netns exec " + b_ + " tc qdisc add dev fxfvb root tbf rate 400mbit burst 256kb "
             "latency 20ms") == 0;
  }
  ~Namespaces() {
    Sh("ip netns del " + a_);
    Sh("ip netns del " + b_);
  }
  bool ok() const { return ok_; }
  std::string a_, b_, ip_a_, ip_b_;

 private:
  bool ok_ = false;
};

// The data stream (most bytes acknowledged) from the sender's namespace to the receiver port,
// as "SRC_PORT bytes_acked", or "" when none is established yet.
std::pair<int, uint64_t> BusiestStream(const std::string& ns, int port) {
  std::string cmd = "timeout 5 ip netns exec " + ns
                    + " ss -tinH state established 'dport = :" + std::to_string(port) + "'";
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) {
    return {0, 0};
  }
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) {
    text.append(buf, n);
  }
  ::pclose(f);
  std::pair<int, uint64_t> best{0, 0};
  int sport = 0;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] != ' ' && line[0] != '\t') {
      std::istringstream w(line);
      std::string recvq, sendq, local;
      w >> recvq >> sendq >> local;
      sport = std::atoi(local.substr(local.rfind(':') + 1).c_str());
    } else if (size_t at = line.find("bytes_acked:"); at != std::string::npos) {
      uint64_t acked = std::strtoull(line.c_str() + at + 12, nullptr, 10);
      if (acked > best.second) {
        best = {sport, acked};
      }
    }
  }
  return best;
}

TEST_F(XferCli, BetweenNamespacesWithOneStreamDestroyedMidTransfer) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root for network namespaces";
  }
  Namespaces ns;
  if (!ns.ok()) {
    GTEST_SKIP() << "cannot create namespaces, veth or tbf here";
  }
  // Odd sizes plus one big file that keeps the streams busy for a few seconds at 400 Mbit/s.
  fs::create_directories(src_ + "/set/sub");
  size_t i = 0;
  for (size_t n : {0u, 1u, 4095u, 4097u, 65537u, (1u << 20) + 1, 3u << 20}) {
    testing::WriteFile(src_ + "/set/sub/f" + std::to_string(i), testing::RandomBytes(n, 20 + i));
    ++i;
  }
  testing::WriteFile(src_ + "/set/big.bin", testing::RandomBytes(64u << 20, 30));
  int port = 0;
  auto rx = StartRecv(ns.ip_b_, root_, &port, {}, ns.b_);
  ASSERT_GT(port, 0) << rx->err();
  auto tx = StartSend({src_ + "/set", ns.ip_b_ + ":" + std::to_string(port), "--token-file", token_,
                       "--block-size", "1M", "--streams", "4", "--json"},
                      ns.a_);
  // Destroy the busiest stream once it carried 8 MiB (ss -K: the kernel aborts the socket).
  bool cut = false;
  for (int t = 0; t < 500 && !cut; ++t) {
    auto [sport, acked] = BusiestStream(ns.a_, port);
    if (acked > (8u << 20)) {
      cut = Sh("ip netns exec " + ns.a_ + " ss -K 'sport = :" + std::to_string(sport) + "'") == 0;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ASSERT_TRUE(cut);
  ASSERT_EQ(tx->Wait(60000), 0) << tx->err();
  json r = json::parse(tx->out());
  EXPECT_EQ(r["streams_lost"], 1);
  EXPECT_GE(r["retransmitted_blocks"].get<uint64_t>(), 1u);
  EXPECT_EQ(r["files_failed"], 0);
  for (const auto& e : fs::recursive_directory_iterator(src_ + "/set")) {
    if (e.is_regular_file()) {
      std::string rel = fs::relative(e.path(), src_).string();
      EXPECT_EQ(testing::ReadFile(root_ + "/" + rel), testing::ReadFile(e.path().string())) << rel;
    }
  }
  EXPECT_FALSE(HasHiddenPart(root_));
  rx->Kill(SIGTERM);
  EXPECT_EQ(rx->Wait(5000), 0);
}

}  // namespace
}  // namespace ferry::xfer
