#include "xfer/tuning.h"

#include <algorithm>
#include <cstdio>

#include "base/strings.h"

namespace ferry::xfer {
namespace {

uint64_t NextPow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v && p < (1ull << 40)) {
    p <<= 1;
  }
  return p;
}

std::string Bdp(uint64_t rate_bps, uint32_t rtt_us, uint64_t bdp) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "bandwidth-delay product %s (%s x %.1f ms)",
                HumanBytes(static_cast<double>(bdp)).c_str(),
                FormatRate(static_cast<double>(rate_bps)).c_str(), rtt_us / 1000.0);
  return buf;
}

}  // namespace

std::string FormatRate(double bits_per_second) {
  char buf[48];
  if (bits_per_second >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.3g Gbit/s", bits_per_second / 1e9);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g Mbit/s", bits_per_second / 1e6);
  }
  return buf;
}

TuningPlan PlanSender(uint64_t rate_bps,
                      uint32_t rtt_us,
                      int streams_requested,
                      const KernelBufferLimits& limits) {
  TuningPlan plan;
  if (rtt_us == 0) {
    rtt_us = 100;
  }
  plan.bdp_bytes = rate_bps / 8 * rtt_us / 1000000;
  uint64_t need_total = 2 * plan.bdp_bytes;
  uint64_t explicit_cap = 2 * limits.wmem_max;
  plan.per_stream_cap = std::max(limits.tcp_wmem_max, explicit_cap);
  if (plan.per_stream_cap == 0) {
    plan.per_stream_cap = 4u << 20;
  }
  if (streams_requested > 0) {
    plan.streams = std::min(streams_requested, kMaxStreams);
  } else {
    // Long paths get several streams even with big buffers (loss recovery is per stream);
    // short paths need few, and each stream costs CPU.
    int min_streams = rtt_us >= 5000 ? 8 : 2;
    uint64_t by_cap = (need_total + plan.per_stream_cap - 1) / plan.per_stream_cap;
    plan.max_streams = static_cast<int>(
        std::clamp<uint64_t>(by_cap, static_cast<uint64_t>(min_streams), kMaxAutoStreams));
    plan.streams = std::min(plan.max_streams, std::max(min_streams, kInitialStreams));
    if (plan.max_streams > plan.streams) {
      plan.notes.push_back("starting with " + std::to_string(plan.streams) + " streams, up to "
                           + std::to_string(plan.max_streams)
                           + " if their buffers limit them: one stream's send buffer is capped at "
                           + HumanBytes(static_cast<double>(plan.per_stream_cap)) + ", below the "
                           + Bdp(rate_bps, rtt_us, plan.bdp_bytes));
    }
  }
  if (plan.max_streams < plan.streams) {
    plan.max_streams = plan.streams;
  }
  auto streams = static_cast<uint64_t>(plan.streams);
  plan.per_stream_need = (need_total + streams - 1) / streams;
  if (plan.per_stream_need > limits.tcp_wmem_max && explicit_cap > limits.tcp_wmem_max) {
    // Autotuning cannot reach it but an explicit buffer gets further.
    uint64_t want = std::min(plan.per_stream_need, explicit_cap) / 2;
    plan.send_buffer = static_cast<int>(std::min<uint64_t>(want, 1u << 30));
  }
  if (static_cast<uint64_t>(plan.max_streams) * plan.per_stream_cap < need_total) {
    uint64_t v = NextPow2(std::max<uint64_t>(plan.per_stream_need, 16u << 20));
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "the kernel caps a stream's send buffer at %s (net.ipv4.tcp_wmem max %llu, "
                  "net.core.wmem_max %llu); %d streams cannot keep the %s in flight. "
                  "Raise it with: sysctl -w net.core.wmem_max=%llu "
                  "net.ipv4.tcp_wmem='%llu %llu %llu' (or use more --streams)",
                  HumanBytes(static_cast<double>(plan.per_stream_cap)).c_str(),
                  static_cast<unsigned long long>(limits.tcp_wmem_max),
                  static_cast<unsigned long long>(limits.wmem_max), plan.max_streams,
                  Bdp(rate_bps, rtt_us, plan.bdp_bytes).c_str(), static_cast<unsigned long long>(v),
                  static_cast<unsigned long long>(limits.tcp_wmem_min),
                  static_cast<unsigned long long>(limits.tcp_wmem_default),
                  static_cast<unsigned long long>(v));
    plan.warnings.emplace_back(buf);
  }
  return plan;
}

std::vector<std::string> ReceiverBufferWarnings(uint64_t rate_bps,
                                                uint32_t rtt_us,
                                                int streams,
                                                const KernelBufferLimits& limits) {
  std::vector<std::string> out;
  if (streams <= 0 || rtt_us == 0) {
    return out;
  }
  uint64_t bdp = rate_bps / 8 * rtt_us / 1000000;
  uint64_t need = (2 * bdp + static_cast<uint64_t>(streams) - 1) / static_cast<uint64_t>(streams);
  uint64_t cap = limits.tcp_rmem_max;  // the receiver keeps autotuning on
  if (cap == 0 || cap >= need) {
    return out;
  }
  uint64_t v = NextPow2(std::max<uint64_t>(need, 16u << 20));
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "the receiving host caps a stream's receive buffer at %s (net.ipv4.tcp_rmem max); "
      "%d streams need %s each for the %s. Raise it on the receiver with: "
      "sysctl -w net.core.rmem_max=%llu net.ipv4.tcp_rmem='%llu %llu %llu'",
      HumanBytes(static_cast<double>(cap)).c_str(), streams,
      HumanBytes(static_cast<double>(need)).c_str(), Bdp(rate_bps, rtt_us, bdp).c_str(),
      static_cast<unsigned long long>(v), static_cast<unsigned long long>(limits.tcp_rmem_min),
      static_cast<unsigned long long>(limits.tcp_rmem_default), static_cast<unsigned long long>(v));
  out.emplace_back(buf);
  return out;
}

}  // namespace ferry::xfer
