#include "xfer/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace ferry::xfer::testing {

struct FaultProxy::Link {
  int index = 0;
  Fd client;
  Fd server;
  std::atomic<bool> dead{false};
  uint64_t up_bytes = 0;  // client -> server, touched by the upstream pump only
  std::atomic<uint64_t> up_forwarded{0};
  void Reset() {
    if (dead.exchange(true)) {
      return;
    }
    linger l{1, 0};  // close with RST, like a cut cable followed by a timeout
    (void)::setsockopt(client.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
    (void)::setsockopt(server.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
    (void)::shutdown(client.get(), SHUT_RDWR);
    (void)::shutdown(server.get(), SHUT_RDWR);
  }
};

FaultProxy::FaultProxy(uint16_t upstream_port, std::vector<Rule> rules, uint64_t cut_all_after)
    : upstream_port_(upstream_port), rules_(std::move(rules)), cut_all_after_(cut_all_after) {
  listener_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0
      || ::listen(listener_.get(), 64) != 0) {
    throw std::runtime_error("proxy listen failed");
  }
  socklen_t len = sizeof sa;
  ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  port_ = ntohs(sa.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FaultProxy::~FaultProxy() {
  stop_.store(true);
  acceptor_.join();
  std::vector<std::thread> pumps;
  {
    MutexLock lock(mu_);
    for (auto& l : links_) {
      (void)::shutdown(l->client.get(), SHUT_RDWR);
      (void)::shutdown(l->server.get(), SHUT_RDWR);
    }
    pumps.swap(pumps_);
  }
  for (auto& t : pumps) {
    t.join();
  }
}

uint64_t FaultProxy::forwarded(int index) {
  MutexLock lock(mu_);
  for (auto& l : links_) {
    if (l->index == index) {
      return l->up_forwarded.load();
    }
  }
  return 0;
}

void FaultProxy::AcceptLoop() {
  while (!stop_.load()) {
    pollfd p{listener_.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) {
      continue;
    }
    Fd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) {
      continue;
    }
    if (total_.load() >= cut_all_after_) {
      continue;  // the "network" is down: refuse by closing
    }
    Fd server(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(upstream_port_);
    if (::connect(server.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      continue;
    }
    auto link = std::make_shared<Link>();
    link->index = accepted_.fetch_add(1);
    link->client = std::move(client);
    link->server = std::move(server);
    MutexLock lock(mu_);
    links_.push_back(link);
    pumps_.emplace_back([this, link] { Pump(link, true); });
    pumps_.emplace_back([this, link] { Pump(link, false); });
  }
}

void FaultProxy::Pump(const std::shared_ptr<Link>& link, bool upstream) {
  int from = upstream ? link->client.get() : link->server.get();
  int to = upstream ? link->server.get() : link->client.get();
  std::vector<uint8_t> buf(size_t{64} * 1024);
  const Rule* rule = nullptr;
  for (const Rule& r : rules_) {
    if (link->index >= r.first_conn && link->index <= r.last_conn) {
      rule = &r;
    }
  }
  auto started = std::chrono::steady_clock::now();
  while (!stop_.load() && !link->dead.load()) {
    if (upstream && rule != nullptr && rule->max_bytes_per_s > 0) {
      // Hold the next read until the bytes so far fit the rate (bounded: 100 ms per round).
      auto due =
          started + std::chrono::microseconds(link->up_bytes * 1000000 / rule->max_bytes_per_s);
      if (std::chrono::steady_clock::now() < due) {
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            due - std::chrono::steady_clock::now(), std::chrono::milliseconds(100)));
        continue;
      }
    }
    pollfd p{from, POLLIN, 0};
    int n = ::poll(&p, 1, 100);
    if (n <= 0) {
      continue;
    }
    size_t want = buf.size();
    if (upstream && rule != nullptr && rule->max_bytes_per_s > 0) {
      want = std::min<size_t>(want, 16384);
    }
    if (upstream && rule != nullptr && rule->cut_after != kNever) {
      if (link->up_bytes >= rule->cut_after) {
        cuts_.fetch_add(1);
        link->Reset();
        return;
      }
      want = std::min<uint64_t>(want, rule->cut_after - link->up_bytes);
    }
    ssize_t got = ::recv(from, buf.data(), want, 0);
    if (got <= 0) {
      (void)::shutdown(to, SHUT_WR);
      return;
    }
    auto g = static_cast<uint64_t>(got);
    if (upstream) {
      if (rule != nullptr && rule->flip_at >= link->up_bytes
          && rule->flip_at < link->up_bytes + g) {
        buf[rule->flip_at - link->up_bytes] ^= 1;
        flips_.fetch_add(1);
      }
      link->up_bytes += g;
      if (total_.fetch_add(g) + g >= cut_all_after_) {
        MutexLock lock(mu_);
        cuts_.fetch_add(1);
        for (auto& l : links_) {
          l->Reset();
        }
        return;
      }
    }
    size_t sent = 0;
    while (sent < g && !link->dead.load()) {
      ssize_t w = ::send(to, buf.data() + sent, g - sent, MSG_NOSIGNAL);
      if (w <= 0) {
        link->Reset();
        return;
      }
      sent += static_cast<size_t>(w);
      if (upstream) {
        link->up_forwarded.fetch_add(static_cast<uint64_t>(w));
      }
    }
  }
}

}  // namespace ferry::xfer::testing
