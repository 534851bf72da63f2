// LinkMeter: the round-trip time and the delivery rate of the path to one origin, measured from
// the cache's own origin requests; read-ahead sizes its window from them (file_ahead.h).
//
// - Round trip: the shortest latency of the last kSamples requests (a request's latency is its
//   round trip plus its transfer time, so the shortest one is the best estimate of the trip).
// - Delivery rate: bytes received over the time at least one request was outstanding ("busy
//   time"), both decayed by half whenever the busy time passes kDecayNs, so the rate follows
//   the last seconds. With requests pipelined back to back the busy time is the transfer time
//   and the rate is the link's; with one request per round trip it is bytes per round trip,
//   which is what a window twice that size doubles — when that many requests may go out. So
//   the rate is also estimated from the transfer time of large requests (latency minus the
//   round trip, over the last kSamples requests of at least kMinTransferSample bytes), and
//   the larger of the two counts.
// - BandwidthDelay(): rate x round trip, the bytes in flight that keep the path busy.
// Thread-safety: every method may be called concurrently (one mutex, no allocation).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <utility>

#include "base/mutex.h"

namespace ferry::readahead {

class LinkMeter {
 public:
  static constexpr size_t kSamples = 32;
  static constexpr int64_t kDecayNs = 2'000'000'000;
  static constexpr uint64_t kMinTransferSample = 512 << 10;

  // `clock_ns` (monotonic nanoseconds) lets tests time requests without sleeping; empty: the
  // steady clock.
  explicit LinkMeter(std::function<int64_t()> clock_ns = {}) : clock_ns_(std::move(clock_ns)) {}

  // A request leaves now; returns its start time for End().
  int64_t Begin();
  // The request started at `start_ns` completed with `bytes` received.
  void End(int64_t start_ns, uint64_t bytes);

  // Seconds; 0 until a request completed.
  double rtt_s() const;
  // Bytes per second; 0 until bytes were received.
  double rate_bps() const;
  // rate_bps() * rtt_s(), in bytes.
  uint64_t BandwidthDelay() const;
  uint64_t requests() const;

  // Test hook: a sample as if a request had taken `latency_ns` for `bytes` with the link busy
  // for `busy_ns` of it.
  void AddSample(int64_t latency_ns, int64_t busy_ns, uint64_t bytes);

 private:
  void AddLocked(int64_t latency_ns, int64_t busy_ns, uint64_t bytes) FERRY_REQUIRES(mu_);
  double RateLocked(int64_t now) const FERRY_REQUIRES(mu_);
  double TransferRateLocked() const FERRY_REQUIRES(mu_);
  int64_t RttLocked() const FERRY_REQUIRES(mu_);
  int64_t Now() const;

  const std::function<int64_t()> clock_ns_;
  mutable Mutex mu_;
  uint32_t outstanding_ FERRY_GUARDED_BY(mu_) = 0;
  // Start of the current busy period (outstanding_ > 0).
  int64_t busy_since_ FERRY_GUARDED_BY(mu_) = 0;
  double busy_ns_ FERRY_GUARDED_BY(mu_) = 0;  // completed busy time (decayed)
  double bytes_ FERRY_GUARDED_BY(mu_) = 0;    // bytes received (decayed)
  std::array<int64_t, kSamples> latency_ FERRY_GUARDED_BY(mu_){};
  std::array<uint64_t, kSamples> bytes_of_ FERRY_GUARDED_BY(mu_){};
  uint64_t count_ FERRY_GUARDED_BY(mu_) = 0;
};

}  // namespace ferry::readahead
