#include "plugin/proxy/origin_meter.h"

#include <algorithm>

#include "base/clock.h"

namespace ferry::proxy {

int64_t OriginMeter::Now() const {
  return clock_ns_ ? clock_ns_() : NowNs();
}

void OriginMeter::AdvanceLocked(int64_t now_ns) {
  if (last_ns_ != 0 && now_ns > last_ns_) {
    const double dt = static_cast<double>(now_ns - last_ns_) * 1e-9;
    s_.inflight_seconds += dt * static_cast<double>(s_.inflight);
    s_.busy_seconds += s_.inflight > 0 ? dt : 0.0;
  }
  last_ns_ = now_ns;
}

void OriginMeter::Begin(uint64_t n) {
  MutexLock lock(mu_);
  AdvanceLocked(Now());
  s_.inflight += n;
  s_.requests += n;
  s_.max_inflight = std::max(s_.max_inflight, s_.inflight);
}

void OriginMeter::End(uint64_t n) {
  MutexLock lock(mu_);
  AdvanceLocked(Now());
  s_.inflight -= std::min(n, s_.inflight);
}

MeterSnapshot OriginMeter::Snapshot() {
  MutexLock lock(mu_);
  AdvanceLocked(Now());
  return s_;
}

void MeteredOrigin::Read(std::span<cache::OriginRead> reads) {
  meter_.Begin(reads.size());
  inner().Read(reads);
  meter_.End(reads.size());
}

}  // namespace ferry::proxy
