// Only <linux/tcp.h> has the busy/limited counters (Linux 4.9+); it clashes with
// <netinet/tcp.h>, so this file includes nothing else from the TCP headers.
#include "xfer/tcp_stats.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace ferry::xfer {

TcpStats ReadTcpStats(int fd) {
  TcpStats out;
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) {
    return out;
  }
  out.rtt_us = info.tcpi_rtt;
  // Older kernels return a shorter struct: the counters are then absent.
  if (len >= offsetof(tcp_info, tcpi_sndbuf_limited) + sizeof info.tcpi_sndbuf_limited) {
    out.busy_us = info.tcpi_busy_time;
    out.buffer_limited_us = info.tcpi_sndbuf_limited + info.tcpi_rwnd_limited;
    out.delivery_rate = info.tcpi_delivery_rate;
    out.valid = true;
  }
  return out;
}

}  // namespace ferry::xfer
