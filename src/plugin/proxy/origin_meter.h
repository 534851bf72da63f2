// OriginMeter: how busy a proxy keeps its origin. MeteredOrigin wraps the cache::Origin of each
// open file and reports every origin read to one process-wide OriginMeter, which integrates the
// number of requests in flight over time:
//
//   mean outstanding requests over a pass = delta(inflight_seconds) / pass wall time
//   ... while the origin was busy          = delta(inflight_seconds) / delta(busy_seconds)
//
// A request is one OriginRead (one vector read or read on one origin channel); XrdOrigin issues
// all reads of a Read() call at once and they finish at different moments, so each is counted
// from issue to the end of its batch (an upper bound that is tight when a batch's reads are
// alike).
// Thread-safety: all methods may be called concurrently (one short mutex per update).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "base/mutex.h"
#include "cache/origin.h"
#include "plugin/proxy/forwarding_origin.h"

namespace ferry::proxy {

struct MeterSnapshot {
  uint64_t requests = 0;  // origin reads issued
  uint64_t inflight = 0;  // origin reads in flight now
  uint64_t max_inflight = 0;
  double inflight_seconds = 0;  // integral of the in-flight count over time
  double busy_seconds = 0;      // time with at least one read in flight
};

class OriginMeter {
 public:
  // `clock_ns` (monotonic nanoseconds) lets tests integrate over exact times without sleeping;
  // empty: the steady clock.
  explicit OriginMeter(std::function<int64_t()> clock_ns = {}) : clock_ns_(std::move(clock_ns)) {}

  void Begin(uint64_t n) FERRY_EXCLUDES(mu_);
  void End(uint64_t n) FERRY_EXCLUDES(mu_);
  MeterSnapshot Snapshot() FERRY_EXCLUDES(mu_);

 private:
  int64_t Now() const;
  void AdvanceLocked(int64_t now_ns) FERRY_REQUIRES(mu_);
  const std::function<int64_t()> clock_ns_;
  Mutex mu_;
  MeterSnapshot s_ FERRY_GUARDED_BY(mu_);
  int64_t last_ns_ FERRY_GUARDED_BY(mu_) = 0;
};

// An Origin that forwards to `inner` and reports to `meter` (which must outlive it).
class MeteredOrigin final : public ForwardingOrigin {
 public:
  MeteredOrigin(std::shared_ptr<cache::Origin> inner, OriginMeter& meter)
      : ForwardingOrigin(std::move(inner)), meter_(meter) {}

  void Read(std::span<cache::OriginRead> reads) override;

 private:
  OriginMeter& meter_;
};

}  // namespace ferry::proxy
