#include "plugin/proxy/origin_gate.h"

#include <cerrno>
#include <utility>

namespace ferry::proxy {

Error OriginStalledError(const std::string& origin, const std::string& what) {
  return {ErrorCode::kRemote, "origin " + origin + " " + what, ETIMEDOUT};
}

bool IsOriginStalled(const Error& e) {
  return e.code() == ErrorCode::kRemote && e.sys_errno() == ETIMEDOUT;
}

OriginGate::OriginGate(std::string origin, uint32_t limit, uint32_t wait_ms)
    : origin_(std::move(origin)), limit_(limit > 0 ? limit : 1), wait_ms_(wait_ms) {}

bool OriginGate::Enter() {
  MutexLock lock(mu_);
  if (in_flight_ >= limit_) {
    ++waited_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms_);
    while (in_flight_ >= limit_) {
      if (!freed_.WaitUntil(mu_, deadline) && in_flight_ >= limit_) {
        ++turned_away_;
        return false;
      }
    }
  }
  ++in_flight_;
  max_in_flight_ = std::max(max_in_flight_, in_flight_);
  return true;
}

void OriginGate::Leave() {
  {
    MutexLock lock(mu_);
    --in_flight_;
  }
  freed_.NotifyOne();
}

GateCounts OriginGate::Counts() {
  MutexLock lock(mu_);
  return {in_flight_, max_in_flight_, waited_, turned_away_,
          unanswered_.load(std::memory_order_relaxed)};
}

namespace {

std::string Busy(const OriginGate& gate) {
  return "is not answering: every request slot stayed taken for " + std::to_string(gate.wait_ms())
         + " ms (ferry.origin_inflight, ferry.origin_wait_ms)";
}

// A request the origin left unanswered for XrdCl's whole timeout is not retried: the origin
// is stalled, and the client gets an error now rather than after another timeout.
void FailUnanswered(OriginGate& gate, std::span<io::ReadRequest> ranges) {
  bool counted = false;
  for (io::ReadRequest& r : ranges) {
    if (!r.status && r.status.error().code() == ErrorCode::kTimeout) {
      r.status = OriginStalledError(gate.origin(), "did not answer within ferry.timeout");
      if (!counted) {
        gate.CountUnanswered();
        counted = true;
      }
    }
  }
}

}  // namespace

Result<cache::OriginInfo> GatedOrigin::Stat() {
  if (!gate_.Enter()) {
    return OriginStalledError(gate_.origin(), Busy(gate_));
  }
  Result<cache::OriginInfo> info = inner().Stat();
  gate_.Leave();
  if (!info && info.error().code() == ErrorCode::kTimeout) {
    gate_.CountUnanswered();
    return OriginStalledError(gate_.origin(), "did not answer within ferry.timeout");
  }
  return info;
}

void GatedOrigin::Read(std::span<cache::OriginRead> reads) {
  if (!gate_.Enter()) {
    const Error busy = OriginStalledError(gate_.origin(), Busy(gate_));
    for (cache::OriginRead& read : reads) {
      for (io::ReadRequest& r : read.ranges) {
        r.status = busy;
      }
    }
    return;
  }
  inner().Read(reads);
  gate_.Leave();
  for (cache::OriginRead& read : reads) {
    FailUnanswered(gate_, read.ranges);
  }
}

}  // namespace ferry::proxy
