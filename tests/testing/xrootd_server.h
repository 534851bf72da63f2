// XrootdOrigin: a real, read-only xrootd data server for integration tests.
//
// Start() launches /usr/bin/xrootd (Debian's xrootd-server) serving `data_dir` as the root of
// its namespace on 127.0.0.1 and a free port, waits (bounded) until it accepts TCP connections,
// and returns a handle whose destructor stops that one process by PID (SIGTERM, then SIGKILL
// after a bounded wait) and removes the server's private state directory.
//
//   FERRY_XROOTD_ORIGIN_OR_SKIP(origin, dir.path());     // in a TEST body
//   std::string url = origin->Url("file.root");           // root://127.0.0.1:P//file.root
//
// - xrootd missing from PATH: Start() reports `unavailable` and the macro GTEST_SKIPs.
// - Running as root, xrootd is started with `-R xrootd` (it refuses root). That account must be
//   able to read data_dir and traverse its parents: Start() adds go+rx to data_dir itself when
//   missing (a TempDir is 0700); parents under /tmp are fine, /root is not.
// - The server listens only on 127.0.0.1 (LD_PRELOAD of the test bed's bind shim, built by
//   CMake). It runs under `timeout`, so a crashed test cannot leave it running for longer than
//   `max_lifetime`.
// Thread-safety: one XrootdOrigin per thread or guarded by the caller; methods are cheap.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ferry::testing {

struct XrootdOriginOptions {
  std::chrono::seconds start_timeout{20};  // until the port accepts connections
  std::chrono::seconds max_lifetime{900};  // hard upper bound (coreutils timeout)
  std::string extra_config;                // appended to the generated xrootd config
  // Run inside this network namespace (e.g. TestbedWan::name()) and listen on `netns_address`
  // (TestbedWan::address()) instead of 127.0.0.1.
  std::string netns;
  std::string netns_address;
};

class XrootdOrigin;

struct XrootdStart {
  std::unique_ptr<XrootdOrigin> origin;  // set on success
  bool unavailable = false;              // xrootd not installed: skip, do not fail
  std::string message;                   // why it did not start
};

class XrootdOrigin {
 public:
  static XrootdStart Start(const std::string& data_dir, const XrootdOriginOptions& options = {});

  XrootdOrigin(const XrootdOrigin&) = delete;
  XrootdOrigin& operator=(const XrootdOrigin&) = delete;
  ~XrootdOrigin();

  // "root://127.0.0.1:P/".
  std::string BaseUrl() const;
  // URL of data_dir/relative_path: "root://127.0.0.1:P//relative_path".
  std::string Url(const std::string& relative_path) const;
  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // The server's log file, and its last `max_bytes` for failure messages.
  std::string log_path() const;
  std::string LogTail(size_t max_bytes = 4000) const;
  // True while the process runs. Once it has ended, exit_status() says how ("exit 1",
  // "signal 9", "reaped elsewhere" when waitpid reports no such child).
  bool Running();
  const std::string& exit_status() const { return exit_status_; }
  // Stops the server now (the destructor does this too). Idempotent.
  void Stop();

 private:
  XrootdOrigin() = default;
  std::string state_dir_;
  std::string host_ = "127.0.0.1";
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::string exit_status_;
};

// An emulated WAN for the scope of a test or benchmark: scripts/testbed/wan.sh up in Up(),
// wan.sh down in the destructor, with a private FERRY_TB_DIR. Start an origin inside with
// XrootdOriginOptions{.netns = wan->name(), .netns_address = wan->address()}. Needs root,
// network namespaces and NFQUEUE; `unavailable` (skip) when the script exits 77.
class TestbedWan;

struct TestbedWanStart {
  std::unique_ptr<TestbedWan> wan;
  bool unavailable = false;
  std::string message;
};

class TestbedWan {
 public:
  // rtt like "40ms", rate like "1gbit" (wan.sh syntax).
  static TestbedWanStart Up(const std::string& rtt = "40ms", const std::string& rate = "1gbit");
  TestbedWan(const TestbedWan&) = delete;
  TestbedWan& operator=(const TestbedWan&) = delete;
  ~TestbedWan();

  const std::string& name() const { return name_; }        // namespace, "ftb-g<pid>"
  const std::string& address() const { return address_; }  // the namespace side of the link
  // "tcp connect (1 RTT) ms: ..." and iperf3 lines from `wan.sh check` (seconds per iperf run).
  std::string Check(int seconds = 1) const;

 private:
  TestbedWan() = default;
  std::string state_dir_;
  std::string name_;
  std::string address_;
};

// Runs `bash scripts/testbed/<script> args...` with FERRY_TB_DIR=state_dir, bounded by
// timeout_s; returns the exit code (-1 when it could not run) and stdout in *out.
// extra_env: more "NAME=value" entries for the script's environment.
int RunTestbedScript(const std::string& script,
                     const std::vector<std::string>& args,
                     const std::string& state_dir,
                     std::string* out,
                     int timeout_s = 120,
                     const std::vector<std::string>& extra_env = {});

// Path of the bind shim library built by CMake ("" when unknown).
std::string BindShimPath();
// Path of scripts/testbed in the source tree.
std::string TestbedScriptsDir();

}  // namespace ferry::testing

// Declares `std::unique_ptr<XrootdOrigin> var` serving `dir`; skips the test when xrootd is not
// installed and fails it when the server does not come up.
#define FERRY_XROOTD_ORIGIN_OR_SKIP(var, dir)                                                \
  std::unique_ptr<::ferry::testing::XrootdOrigin> var;                                       \
  do {                                                                                       \
    ::ferry::testing::XrootdStart ferry_start_ = ::ferry::testing::XrootdOrigin::Start(dir); \
    if (ferry_start_.unavailable) {                                                          \
      GTEST_SKIP() << ferry_start_.message;                                                  \
    }                                                                                        \
    ASSERT_TRUE(ferry_start_.origin != nullptr) << ferry_start_.message;                     \
    var = std::move(ferry_start_.origin);                                                    \
  } while (0)
