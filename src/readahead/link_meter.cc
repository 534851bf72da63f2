#include "readahead/link_meter.h"

#include <algorithm>

#include "base/clock.h"

namespace ferry::readahead {

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
  bytes_of_[count_ % kSamples] = bytes;
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
  const double busy_rate = busy <= 0 ? 0.0 : bytes_ * 1e9 / busy;
  return std::max(busy_rate, TransferRateLocked());
}

double LinkMeter::TransferRateLocked() const {
  // The busy-time rate of a reader that keeps one or two requests out is its window per round
  // trip, not the link's, and a window sized from it stays where it is. A large request's
  // latency beyond the round trip is its transfer time, which does measure the link. The
  // floor (an eighth of the trip) keeps jitter on a request that took about one trip from
  // reading as an unbounded rate.
  const int64_t rtt = RttLocked();
  if (rtt <= 0) {
    return 0;
  }
  const size_t n = std::min<uint64_t>(count_, kSamples);
  double bytes = 0;
  double ns = 0;
  for (size_t i = 0; i < n; ++i) {
    if (bytes_of_[i] >= kMinTransferSample) {
      bytes += static_cast<double>(bytes_of_[i]);
      ns += static_cast<double>(std::max(latency_[i] - rtt, rtt / 8));
    }
  }
  return ns <= 0 ? 0.0 : bytes * 1e9 / ns;
}

int64_t LinkMeter::RttLocked() const {
  if (count_ == 0) {
    return 0;
  }
  const size_t n = std::min<uint64_t>(count_, kSamples);
  return *std::min_element(latency_.begin(), latency_.begin() + n);
}

double LinkMeter::rtt_s() const {
  MutexLock lock(mu_);
  return static_cast<double>(RttLocked()) / 1e9;
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

}  // namespace ferry::readahead
