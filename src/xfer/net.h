// TCP plumbing for the transfer: framed connections, listening, address parsing, and the
// kernel's socket-buffer limits.
//
// Conn owns one connected socket. Sends are serialised by an internal mutex, so any thread may
// send whole frames; receives must come from one thread at a time. Every blocking call is
// bounded by the socket timeouts set with SetTimeouts (a timeout is ErrorCode::kTimeout).
// Shutdown() may be called from any thread to wake a blocked receiver (it then sees EOF).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/mutex.h"
#include "base/result.h"
#include "xfer/payload_hasher.h"
#include "xfer/protocol.h"

namespace ferry::xfer {

struct HostPort {
  std::string host;  // name, IPv4, or IPv6 without brackets
  uint16_t port = 0;
  std::string rest;  // what followed "/" (the destination), "" if none
};
// "host:port", "host:port/dest/dir", "[::1]:port/dest". Port 0 is allowed (listen: any).
Result<HostPort> ParseHostPort(std::string_view text);

// One resolved address of a receiver, with "host:port" for messages.
struct SockAddr {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = 0;
  std::string where;  // host:port as the user wrote it
};
// getaddrinfo for TCP: every address, in the resolver's order; kNotFound if none.
Result<std::vector<SockAddr>> Resolve(const std::string& host, uint16_t port);

class Conn;

// A TCP connect that has been started but not waited for, so that several connections can
// take their handshake round trip together. Finish() waits (bounded) and may run on another
// thread than Start(); dropping an unfinished one abandons the connect. Movable.
class PendingConnect {
 public:
  PendingConnect() = default;
  // Creates the socket, sets the options (as Conn::Connect) and sends the SYN. A congestion
  // control the kernel refuses is kInvalidArgument; other failures are I/O errors.
  static Result<PendingConnect> Start(const SockAddr& to,
                                      int send_buffer = 0,
                                      int recv_buffer = 0,
                                      const std::string& congestion = {});
  bool valid() const { return fd_.valid(); }
  // The connected Conn (blocking, timeouts set to timeout_ms), or kTimeout / an I/O error.
  Result<std::unique_ptr<Conn>> Finish(int timeout_ms);

 private:
  Fd fd_;
  std::string where_;
};

// The message of the kShortRead error a receive returns when the peer closed the connection
// between frames (closed inside a frame part, the message says how many bytes came).
inline constexpr std::string_view kConnectionClosed = "connection closed by peer";

class Conn {
 public:
  explicit Conn(Fd fd);
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn() = default;

  // Connects with a bounded wait. send_buffer/recv_buffer > 0 set SO_SNDBUF/SO_RCVBUF before
  // connecting (0 keeps kernel autotuning). A non-empty congestion names the TCP congestion
  // control (TCP_CONGESTION); one the kernel does not have, or does not allow this user, is
  // kInvalidArgument naming the available or allowed ones. Sets TCP_NODELAY.
  static Result<std::unique_ptr<Conn>> Connect(const std::string& host,
                                               uint16_t port,
                                               int timeout_ms,
                                               int send_buffer = 0,
                                               int recv_buffer = 0,
                                               const std::string& congestion = {});

  // Tries each address in turn, as Connect does.
  static Result<std::unique_ptr<Conn>> ConnectAny(std::span<const SockAddr> addrs,
                                                  int timeout_ms,
                                                  int send_buffer = 0,
                                                  int recv_buffer = 0,
                                                  const std::string& congestion = {});

  int fd() const { return fd_.get(); }
  Status SetTimeouts(int recv_ms, int send_ms);
  // SO_SNDBUF on a connected socket (turns send-buffer autotuning off); bytes > 0.
  Status SetSendBuffer(int bytes);

  // Sends header + payload; fills length and payload_hash.
  Status SendFrame(FrameHeader h, std::span<const uint8_t> payload = {});
  // Sends header + payload as given (length and payload_hash already set by the caller).
  Status SendRaw(const FrameHeader& h, std::span<const uint8_t> payload);

  Result<FrameHeader> RecvHeader();
  // Reads exactly dest.size() bytes.
  Status RecvExact(std::span<uint8_t> dest);
  // The same in pieces of at most `piece` bytes, each added to `hasher` as soon as it arrived,
  // while it is still in the cache the copy from the socket left it in (one pass over a block
  // instead of two).
  Status RecvExactHashed(std::span<uint8_t> dest, PayloadHasher& hasher, size_t piece);
  // Reads a control payload (length <= MaxPayload) and checks its hash.
  Result<std::vector<uint8_t>> RecvPayload(const FrameHeader& h);
  // Reads the next frame, expecting `type`; an ERROR frame becomes its error.
  Result<std::vector<uint8_t>> Expect(FrameType type, FrameHeader* header = nullptr);

  void Shutdown();
  // Ends our side gracefully: no more sends, then reads and discards what the peer still sends
  // (at most max_ms), so closing does not reset the connection before the peer read our last
  // frame.
  void FinishAndDrain(int max_ms);
  // Smoothed RTT from TCP_INFO in microseconds (0 if unknown).
  uint32_t KernelRttUs() const;
  // The connection's TCP congestion control ("cubic", "bbr"; "" if unknown).
  std::string CongestionControl() const;
  std::string PeerName() const;
  // Effective SO_SNDBUF / SO_RCVBUF (as the kernel reports them).
  int SendBufferBytes() const;
  int RecvBufferBytes() const;

 private:
  Fd fd_;
  Mutex send_mu_;  // serialises whole frames on the socket
};

// A listening socket on addr:port (addr "" or "0.0.0.0" = any IPv4, "::" = any IPv6).
Result<Fd> Listen(const std::string& addr, uint16_t port, int backlog = 128);
Result<uint16_t> LocalPort(int fd);

// The kernel's socket-buffer limits (bytes), read from /proc/sys.
struct KernelBufferLimits {
  uint64_t wmem_max = 0;      // net.core.wmem_max: cap of an explicit SO_SNDBUF
  uint64_t rmem_max = 0;      // net.core.rmem_max: cap of an explicit SO_RCVBUF
  uint64_t tcp_wmem_max = 0;  // net.ipv4.tcp_wmem[2]: cap of send-buffer autotuning
  uint64_t tcp_rmem_max = 0;  // net.ipv4.tcp_rmem[2]: cap of receive-buffer autotuning
  uint64_t tcp_wmem_min = 4096, tcp_wmem_default = 16384;
  uint64_t tcp_rmem_min = 4096, tcp_rmem_default = 131072;
};
KernelBufferLimits ReadKernelBufferLimits();

}  // namespace ferry::xfer
