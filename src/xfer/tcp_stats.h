// Per-connection TCP statistics from TCP_INFO, for deciding whether streams are limited by
// their socket buffers (then more streams help) or by the path. Thread-safe.
#pragma once

#include <cstdint>

namespace ferry::xfer {

struct TcpStats {
  uint64_t busy_us = 0;            // time spent with data to send
  uint64_t buffer_limited_us = 0;  // of which limited by our send buffer or the peer's window
  uint64_t delivery_rate = 0;      // bytes/s, the kernel's most recent estimate
  uint32_t rtt_us = 0;
  bool valid = false;
};

TcpStats ReadTcpStats(int fd);

}  // namespace ferry::xfer
