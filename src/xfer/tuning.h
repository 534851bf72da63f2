// Socket-buffer and stream-count planning from the measured RTT and the target rate.
//
// A TCP stream can keep at most its send (and the peer's receive) buffer in flight, so the
// streams together need about twice the bandwidth-delay product (the kernel charges packet
// overhead against the buffers). Kernel autotuning grows a buffer up to tcp_wmem[2] /
// tcp_rmem[2]; an explicit SO_SNDBUF/SO_RCVBUF may reach twice wmem_max/rmem_max but turns
// autotuning off. The plan keeps autotuning when it suffices; in auto mode it starts with at
// most 8 streams and allows up to the count that the per-stream cap needs for `rate` (the
// sender adds them only when TCP_INFO shows the open ones limited by their buffers, since the
// real rate may be far below `rate`); warnings name the exact sysctl to raise.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xfer/net.h"

namespace ferry::xfer {

struct TuningPlan {
  int streams = 0;      // streams to open at the start
  int max_streams = 0;  // auto mode may add streams up to this while buffers limit them
  int send_buffer = 0;  // SO_SNDBUF to request before connect; 0 = keep autotuning
  uint64_t bdp_bytes = 0;
  uint64_t per_stream_need = 0;       // bytes of send buffer each stream should reach
  uint64_t per_stream_cap = 0;        // what the kernel lets one stream reach
  std::vector<std::string> notes;     // informational (e.g. why streams were added)
  std::vector<std::string> warnings;  // throughput will be capped; each names a sysctl
};

inline constexpr int kMaxStreams = 64;
inline constexpr int kMaxAutoStreams = 32;
inline constexpr int kInitialStreams = 8;

// streams_requested = 0 chooses the count. rtt_us = 0 is treated as 100 us.
TuningPlan PlanSender(uint64_t rate_bps,
                      uint32_t rtt_us,
                      int streams_requested,
                      const KernelBufferLimits& limits);

// Warnings for the receiving host (receive buffers) for a session with these parameters.
std::vector<std::string> ReceiverBufferWarnings(uint64_t rate_bps,
                                                uint32_t rtt_us,
                                                int streams,
                                                const KernelBufferLimits& limits);

// "2.0 Gbit/s", "850 Mbit/s".
std::string FormatRate(double bits_per_second);

}  // namespace ferry::xfer
