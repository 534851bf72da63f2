// Test helper: a TCP proxy on 127.0.0.1 between a sender and a receiver that damages the
// client-to-server byte stream on purpose: it can flip one bit at a given offset of chosen
// connections, reset a chosen connection after N bytes, slow a connection down, or reset every
// connection once the total passes a limit. Connections are numbered in accept order (0 = the
// control connection). Every thread is bounded (100 ms polls) and joined by the destructor.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <list>
#include <memory>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/mutex.h"

namespace ferry::xfer::testing {

class FaultProxy {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  struct Rule {
    int first_conn = 0;  // applies to connections [first_conn, last_conn]
    int last_conn = 0;
    uint64_t flip_at = kNever;     // offset in the client->server stream whose low bit flips
    uint64_t cut_after = kNever;   // reset the connection once this many bytes went through
    uint64_t max_bytes_per_s = 0;  // throttle client->server (0: no limit)
  };

  FaultProxy(uint16_t upstream_port, std::vector<Rule> rules, uint64_t cut_all_after = kNever);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;
  uint16_t port() const { return port_; }
  int connections() const { return accepted_.load(); }
  int cuts() const { return cuts_.load(); }
  int flips() const { return flips_.load(); }
  // Client->server bytes forwarded so far on connection `index`.
  uint64_t forwarded(int index);

 private:
  struct Link;
  void AcceptLoop();
  void Pump(const std::shared_ptr<Link>& link, bool upstream);

  uint16_t upstream_port_;
  std::vector<Rule> rules_;
  uint64_t cut_all_after_;
  Fd listener_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> cuts_{0};
  std::atomic<int> flips_{0};
  std::atomic<uint64_t> total_{0};
  std::thread acceptor_;
  Mutex mu_;
  std::vector<std::thread> pumps_ FERRY_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Link>> links_ FERRY_GUARDED_BY(mu_);
};

}  // namespace ferry::xfer::testing
