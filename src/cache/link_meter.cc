#include "cache/link_meter.h"

#include <algorithm>

#include "cache/entry.h"

namespace ferry::cache {

int64_t LinkMeter::Now() const {
  return clock_ns_ ? clock_ns_() : NowNs();
}

int64_t LinkMeter::Begin() {
  const int64_t now = Now();
  MutexLock lock(mu_);
  if (outstanding_++ == 0) {
    busy_since_ = now;
  }
  return now;
}

void LinkMeter::End(int64_t start_ns, uint64_t bytes) {
  const int64_t now = Now();
  MutexLock lock(mu_);
  int64_t busy = 0;
  if (outstanding_ > 0 && --outstanding_ == 0) {
    busy = now - busy_since_;  // a busy period ends: its time counts once
  }
  AddLocked(now - start_ns, busy, bytes);
}

void LinkMeter::AddSample(int64_t latency_ns, int64_t busy_ns, uint64_t bytes) {
  MutexLock lock(mu_);
  AddLocked(latency_ns, busy_ns, bytes);
}

void LinkMeter::AddLocked(int64_t latency_ns, int64_t busy_ns, uint64_t bytes) {
  latency_[count_ % kSamples] = std::max<int64_t>(latency_ns, 1);
  ++count_;
  busy_ns_ += static_cast<double>(busy_ns);
  bytes_ += static_cast<double>(bytes);
  if (busy_ns_ > static_cast<double>(kDecayNs)) {
    busy_ns_ /= 2;
    bytes_ /= 2;
  }
}

double LinkMeter::RateLocked(int64_t now) const {
  // The running busy period counts too: under continuous load no period ever ends.
  const double busy = busy_ns_ + (outstanding_ > 0 ? static_cast<double>(now - busy_since_) : 0.0);
  return busy <= 0 ? 0.0 : bytes_ * 1e9 / busy;
}

double LinkMeter::rtt_s() const {
  MutexLock lock(mu_);
  if (count_ == 0) {
    return 0;
  }
  const size_t n = std::min<uint64_t>(count_, kSamples);
  return static_cast<double>(*std::min_element(latency_.begin(), latency_.begin() + n)) / 1e9;
}

double LinkMeter::rate_bps() const {
  const int64_t now = Now();
  MutexLock lock(mu_);
  return RateLocked(now);
}

uint64_t LinkMeter::BandwidthDelay() const {
  return static_cast<uint64_t>(rate_bps() * rtt_s());
}

uint64_t LinkMeter::requests() const {
  MutexLock lock(mu_);
  return count_;
}

}  // namespace ferry::cache
