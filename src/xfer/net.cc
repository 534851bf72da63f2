#include "xfer/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "base/strings.h"

namespace ferry::xfer {
namespace {

Error SocketError(const std::string& what, int e) {
  if (e == EAGAIN || e == EWOULDBLOCK || e == ETIMEDOUT) {
    return {ErrorCode::kTimeout, what + " timed out", e};
  }
  return IoError(what, e);
}

void SetNoDelay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::string ProcLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

Status SetCongestion(int fd, const std::string& name) {
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                   static_cast<socklen_t>(name.size()))
      == 0) {
    return OkStatus();
  }
  int e = errno;
  if (e == EPERM) {
    return Error(ErrorCode::kInvalidArgument,
                 "TCP congestion control '" + name + "' is not allowed for this user (allowed: "
                     + ProcLine("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
                     + "; root can add it to net.ipv4.tcp_allowed_congestion_control)",
                 e);
  }
  return Error(ErrorCode::kInvalidArgument,
               "TCP congestion control '" + name + "' is not available here (available: "
                   + ProcLine("/proc/sys/net/ipv4/tcp_available_congestion_control")
                   + "; a module such as tcp_" + name + " may need loading)",
               e);
}

}  // namespace

Result<HostPort> ParseHostPort(std::string_view text) {
  HostPort out;
  std::string_view rest = text;
  if (rest.starts_with("[")) {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("unterminated [ in address '" + std::string(text) + "'");
    }
    out.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
  } else {
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos) {
      return InvalidArgumentError("address '" + std::string(text) + "' has no :PORT");
    }
    out.host = std::string(rest.substr(0, colon));
    rest.remove_prefix(colon);
  }
  if (!rest.starts_with(":")) {
    return InvalidArgumentError("address '" + std::string(text) + "' has no :PORT");
  }
  rest.remove_prefix(1);
  size_t slash = rest.find('/');
  std::string_view port_text = rest.substr(0, slash);
  auto port = ParseUint(port_text);
  if (!port || *port > 65535) {
    return InvalidArgumentError("bad port '" + std::string(port_text) + "'");
  }
  out.port = static_cast<uint16_t>(*port);
  if (slash != std::string_view::npos) {
    out.rest = std::string(rest.substr(slash + 1));
  }
  return out;
}

Conn::Conn(Fd fd) : fd_(std::move(fd)) {}

Result<std::vector<SockAddr>> Resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port_text = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res);
  if (rc != 0) {
    return Error(ErrorCode::kNotFound, "cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
  const std::string where = host + ":" + port_text;
  std::vector<SockAddr> out;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) {
      continue;
    }
    SockAddr a;
    std::memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
    a.len = ai->ai_addrlen;
    a.family = ai->ai_family;
    a.where = where;
    out.push_back(std::move(a));
  }
  if (out.empty()) {
    return Error(ErrorCode::kNotFound, "no address for " + host);
  }
  return out;
}

Result<PendingConnect> PendingConnect::Start(const SockAddr& to,
                                             int send_buffer,
                                             int recv_buffer,
                                             const std::string& congestion) {
  Fd fd(::socket(to.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) {
    return IoError("socket failed", errno);
  }
  if (send_buffer > 0) {
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
  }
  if (recv_buffer > 0) {
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &recv_buffer, sizeof recv_buffer);
  }
  SetNoDelay(fd.get());
  if (!congestion.empty()) {
    FERRY_TRY(SetCongestion(fd.get(), congestion));
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to.addr), to.len) != 0
      && errno != EINPROGRESS) {
    return IoError("connect to " + to.where + " failed", errno);
  }
  PendingConnect p;
  p.fd_ = std::move(fd);
  p.where_ = to.where;
  return p;
}

Result<std::unique_ptr<Conn>> PendingConnect::Finish(int timeout_ms) {
  if (!fd_.valid()) {
    return InvalidArgumentError("no connect in progress");
  }
  Fd fd = std::move(fd_);
  pollfd pfd{fd.get(), POLLOUT, 0};
  int n;
  do {
    n = ::poll(&pfd, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    return Error(ErrorCode::kTimeout, "connect to " + where_ + " timed out");
  }
  int err = 0;
  socklen_t len = sizeof err;
  (void)::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (n < 0 || err != 0) {
    return IoError("connect to " + where_ + " failed", n < 0 ? errno : err);
  }
  int flags = ::fcntl(fd.get(), F_GETFL);
  (void)::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  auto conn = std::make_unique<Conn>(std::move(fd));
  FERRY_TRY(conn->SetTimeouts(timeout_ms, timeout_ms));
  return conn;
}

Result<std::unique_ptr<Conn>> Conn::Connect(const std::string& host,
                                            uint16_t port,
                                            int timeout_ms,
                                            int send_buffer,
                                            int recv_buffer,
                                            const std::string& congestion) {
  std::vector<SockAddr> addrs = FERRY_TRY(Resolve(host, port));
  return ConnectAny(addrs, timeout_ms, send_buffer, recv_buffer, congestion);
}

Result<std::unique_ptr<Conn>> Conn::ConnectAny(std::span<const SockAddr> addrs,
                                               int timeout_ms,
                                               int send_buffer,
                                               int recv_buffer,
                                               const std::string& congestion) {
  Error last = IoError("no address to connect to", 0);
  for (const SockAddr& a : addrs) {
    auto pending = PendingConnect::Start(a, send_buffer, recv_buffer, congestion);
    if (!pending) {
      if (pending.error().code() == ErrorCode::kInvalidArgument) {
        return std::move(pending).error();  // the same for every address
      }
      last = std::move(pending).error();
      continue;
    }
    auto conn = pending->Finish(timeout_ms);
    if (conn) {
      return conn;
    }
    last = std::move(conn).error();
  }
  return last;
}

Status Conn::SetSendBuffer(int bytes) {
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes) != 0) {
    return IoError("setsockopt SO_SNDBUF failed", errno);
  }
  return OkStatus();
}

Status Conn::SetTimeouts(int recv_ms, int send_ms) {
  timeval rtv{recv_ms / 1000, static_cast<suseconds_t>(recv_ms % 1000) * 1000};
  timeval stv{send_ms / 1000, static_cast<suseconds_t>(send_ms % 1000) * 1000};
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &rtv, sizeof rtv) != 0
      || ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &stv, sizeof stv) != 0) {
    return IoError("setsockopt timeout failed", errno);
  }
  return OkStatus();
}

Status Conn::SendFrame(FrameHeader h, std::span<const uint8_t> payload) {
  h.length = static_cast<uint32_t>(payload.size());
  h.payload_hash = PayloadHash(payload);
  return SendRaw(h, payload);
}

Status Conn::SendRaw(const FrameHeader& h, std::span<const uint8_t> payload) {
  uint8_t head[kFrameHeaderSize];
  EncodeFrameHeader(h, std::span<uint8_t, kFrameHeaderSize>(head));
  iovec iov[2] = {{head, sizeof head}, {const_cast<uint8_t*>(payload.data()), payload.size()}};
  size_t total = sizeof head + payload.size();
  size_t done = 0;
  MutexLock lock(send_mu_);
  // Bounded: every sendmsg either progresses or fails within SO_SNDTIMEO.
  while (done < total) {
    msghdr msg{};
    iovec cur[2];
    int n_iov = 0;
    size_t skip = done;
    for (const iovec& v : iov) {
      if (skip >= v.iov_len) {
        skip -= v.iov_len;
        continue;
      }
      cur[n_iov++] = {static_cast<uint8_t*>(v.iov_base) + skip, v.iov_len - skip};
      skip = 0;
    }
    msg.msg_iov = cur;
    msg.msg_iovlen = static_cast<size_t>(n_iov);
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return SocketError(std::string("send ") + std::string(FrameTypeName(h.type)), errno);
    }
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

Status Conn::RecvExact(std::span<uint8_t> dest) {
  size_t done = 0;
  while (done < dest.size()) {
    // MSG_WAITALL: one call per frame part instead of one per arriving segment batch.
    ssize_t n = ::recv(fd_.get(), dest.data() + done, dest.size() - done, MSG_WAITALL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return SocketError("receive", errno);
    }
    if (n == 0) {
      // Closed between frames is a clean end; closed inside one is a truncated frame.
      return done == 0 ? Error(ErrorCode::kShortRead, std::string(kConnectionClosed))
                       : Error(ErrorCode::kShortRead,
                               "connection closed by peer after " + std::to_string(done) + " of "
                                   + std::to_string(dest.size()) + " bytes of a frame part");
    }
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

Status Conn::RecvExactHashed(std::span<uint8_t> dest, PayloadHasher& hasher, size_t piece) {
  for (size_t done = 0; done < dest.size();) {
    size_t n = std::min(piece, dest.size() - done);
    FERRY_TRY(RecvExact(dest.subspan(done, n)));
    hasher.Update(dest.data() + done, n);
    done += n;
  }
  return OkStatus();
}

Result<FrameHeader> Conn::RecvHeader() {
  uint8_t head[kFrameHeaderSize];
  FERRY_TRY(RecvExact(head));
  return ParseFrameHeader(head);
}

Result<std::vector<uint8_t>> Conn::RecvPayload(const FrameHeader& h) {
  if (h.length > kMaxControlPayload) {
    return CorruptionError("control payload too large");
  }
  std::vector<uint8_t> p(h.length);
  FERRY_TRY(RecvExact(p));
  if (PayloadHash(p) != h.payload_hash) {
    return CorruptionError(std::string(FrameTypeName(h.type)) + " payload checksum mismatch");
  }
  return p;
}

Result<std::vector<uint8_t>> Conn::Expect(FrameType type, FrameHeader* header) {
  FrameHeader h = FERRY_TRY(RecvHeader());
  auto payload = FERRY_TRY(RecvPayload(h));
  if (h.type == FrameType::kError) {
    return DecodeErrorMessage(payload, "peer: ");
  }
  if (h.type != type) {
    return CorruptionError("expected " + std::string(FrameTypeName(type)) + ", got "
                           + std::string(FrameTypeName(h.type)));
  }
  if (header != nullptr) {
    *header = h;
  }
  return payload;
}

void Conn::Shutdown() {
  (void)::shutdown(fd_.get(), SHUT_RDWR);
}

void Conn::FinishAndDrain(int max_ms) {
  (void)::shutdown(fd_.get(), SHUT_WR);
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_ms);
  uint8_t sink[16384];
  // Bounded by max_ms.
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) {
      continue;
    }
    ssize_t n = ::recv(fd_.get(), sink, sizeof sink, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      return;
    }
  }
}

std::string Conn::CongestionControl() const {
  char name[32] = {};
  socklen_t len = sizeof name;
  if (::getsockopt(fd_.get(), IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) {
    return "";
  }
  // Named rather than braced: {name, n} would read like the initializer-list constructor.
  std::string out(name, ::strnlen(name, std::min<size_t>(len, sizeof name)));
  return out;
}

uint32_t Conn::KernelRttUs() const {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd_.get(), IPPROTO_TCP, TCP_INFO, &info, &len) != 0) {
    return 0;
  }
  return info.tcpi_rtt;
}

std::string Conn::PeerName() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return "?";
  }
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

int Conn::SendBufferBytes() const {
  int v = 0;
  socklen_t len = sizeof v;
  (void)::getsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &v, &len);
  return v;
}

int Conn::RecvBufferBytes() const {
  int v = 0;
  socklen_t len = sizeof v;
  (void)::getsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &v, &len);
  return v;
}

Result<Fd> Listen(const std::string& addr, uint16_t port, int backlog) {
  bool v6 = addr.find(':') != std::string::npos;
  Fd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return IoError("socket failed", errno);
  }
  int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(port);
    if (::inet_pton(AF_INET6, addr.c_str(), &sa.sin6_addr) != 1) {
      return InvalidArgumentError("bad IPv6 listen address '" + addr + "'");
    }
    rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    std::string a = addr.empty() ? "0.0.0.0" : addr;
    if (::inet_pton(AF_INET, a.c_str(), &sa.sin_addr) != 1) {
      addrinfo hints{};
      hints.ai_family = AF_INET;
      addrinfo* res = nullptr;
      if (::getaddrinfo(a.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
        return InvalidArgumentError("bad listen address '" + addr + "'");
      }
      sa.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
      ::freeaddrinfo(res);
    }
    rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  if (rc != 0) {
    return IoError("bind " + addr + ":" + std::to_string(port) + " failed", errno);
  }
  if (::listen(fd.get(), backlog) != 0) {
    return IoError("listen failed", errno);
  }
  return fd;
}

Result<uint16_t> LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return IoError("getsockname failed", errno);
  }
  if (ss.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

namespace {
std::vector<uint64_t> ReadSysctlNumbers(const char* path) {
  std::vector<uint64_t> out;
  std::ifstream in(path);
  uint64_t v;
  while (out.size() < 8 && (in >> v)) {
    out.push_back(v);
  }
  return out;
}
}  // namespace

KernelBufferLimits ReadKernelBufferLimits() {
  KernelBufferLimits k;
  if (auto v = ReadSysctlNumbers("/proc/sys/net/core/wmem_max"); !v.empty()) {
    k.wmem_max = v[0];
  }
  if (auto v = ReadSysctlNumbers("/proc/sys/net/core/rmem_max"); !v.empty()) {
    k.rmem_max = v[0];
  }
  if (auto v = ReadSysctlNumbers("/proc/sys/net/ipv4/tcp_wmem"); v.size() == 3) {
    k.tcp_wmem_min = v[0];
    k.tcp_wmem_default = v[1];
    k.tcp_wmem_max = v[2];
  }
  if (auto v = ReadSysctlNumbers("/proc/sys/net/ipv4/tcp_rmem"); v.size() == 3) {
    k.tcp_rmem_min = v[0];
    k.tcp_rmem_default = v[1];
    k.tcp_rmem_max = v[2];
  }
  return k;
}

}  // namespace ferry::xfer
