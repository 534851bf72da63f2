// One stalled origin must not stall the proxy. Each origin (HOST:PORT) the proxy reads from has a
// gate: at most ferry.origin_inflight requests (a Stat, which opens lazily, or one Read batch)
// in flight at once, and a request that finds no free slot waits at most ferry.origin_wait_ms
// for one. A request that waits longer, or that the origin left unanswered for ferry.timeout
// (XrdCl's request timeout), fails with OriginStalledError(): final, so the cache does not
// retry it (a retry would make the client wait another timeout), and the client gets an error
// (ETIME, "timer expired": oss_errno.h) instead of hanging. Other origins have their own
// gates, so their clients are served meanwhile; the gate of the stalled one lets requests
// through again as soon as it answers.
//
// Thread-safety: OriginGate and GatedOrigin are thread-safe; a gate outlives its origins (the
// service owns the gates for its whole life).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/mutex.h"
#include "base/result.h"
#include "cache/origin.h"
#include "plugin/proxy/forwarding_origin.h"

namespace ferry::proxy {

// The error of a request the origin did not answer in time or that found the origin's slots
// held for ferry.origin_wait_ms. kRemote with ETIMEDOUT as its marker: final for the cache;
// the client gets kOriginTimedOutErrno (oss_errno.h).
Error OriginStalledError(const std::string& origin, const std::string& what);
bool IsOriginStalled(const Error& e);

struct GateCounts {
  uint64_t in_flight = 0;
  uint64_t max_in_flight = 0;
  uint64_t waited = 0;       // requests that found every slot taken
  uint64_t turned_away = 0;  // ... and got no slot within the wait
  uint64_t unanswered = 0;   // requests the origin did not answer within ferry.timeout
};

class OriginGate {
 public:
  OriginGate(std::string origin, uint32_t limit, uint32_t wait_ms);
  OriginGate(const OriginGate&) = delete;
  OriginGate& operator=(const OriginGate&) = delete;
  ~OriginGate() = default;

  // Takes a slot, waiting up to the gate's wait for one. False: none came free.
  bool Enter() FERRY_EXCLUDES(mu_);
  void Leave() FERRY_EXCLUDES(mu_);
  void CountUnanswered() { unanswered_.fetch_add(1, std::memory_order_relaxed); }

  const std::string& origin() const { return origin_; }
  uint32_t wait_ms() const { return wait_ms_; }
  GateCounts Counts() FERRY_EXCLUDES(mu_);

 private:
  const std::string origin_;
  const uint32_t limit_;
  const uint32_t wait_ms_;
  Mutex mu_;
  CondVar freed_;
  uint64_t in_flight_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t max_in_flight_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t waited_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t turned_away_ FERRY_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> unanswered_{0};
};

// An Origin whose requests pass `gate` (which must outlive it), and whose unanswered requests
// fail with OriginStalledError() rather than being retried.
class GatedOrigin final : public ForwardingOrigin {
 public:
  GatedOrigin(std::shared_ptr<cache::Origin> inner, OriginGate& gate)
      : ForwardingOrigin(std::move(inner)), gate_(gate) {}

  Result<cache::OriginInfo> Stat() override;
  void Read(std::span<cache::OriginRead> reads) override;

 private:
  OriginGate& gate_;
};

}  // namespace ferry::proxy
