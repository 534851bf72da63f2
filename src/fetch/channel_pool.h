// ChannelPool: spreads the vector reads of concurrent requests over N origin channels.
//
// A channel is one connection to the origin (for XRootD: a separate XrdCl connection to the
// same endpoint). Servers and proxies may serve the requests of one connection one after the
// other, so concurrent vector reads should not queue on one channel while another is idle.
// Acquire() returns the usable channel with the fewest requests in flight (ties: the lowest
// index, so one request at a time always uses channel 0); Release() returns it. Channels can be
// marked unusable (not open yet, or failed); channel 0 is assumed to be always usable.
//
// Thread-safety: all methods may be called concurrently. No allocation after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/mutex.h"

namespace ferry::fetch {

class ChannelPool {
 public:
  // channels >= 1. Channel 0 starts usable, the others as `others_usable` says.
  explicit ChannelPool(size_t channels, bool others_usable = true);

  size_t size() const { return count_; }

  // The least loaded usable channel from `first` on (read-ahead keeps off channel 0, which
  // the application's own requests then find free); channel 0 when none of those is usable.
  size_t Acquire(size_t first = 0);
  void Release(size_t channel);
  void SetUsable(size_t channel, bool usable);

  uint64_t in_flight(size_t channel) const;
  // Vector reads handed out per channel so far.
  uint64_t acquired(size_t channel) const;

 private:
  struct Slot {
    uint64_t in_flight = 0;
    uint64_t acquired = 0;
    bool usable = true;
  };
  const size_t count_;  // slots_.size(), fixed at construction
  mutable Mutex mu_;
  std::vector<Slot> slots_ FERRY_GUARDED_BY(mu_);
};

// RAII lease of one channel.
class ChannelLease {
 public:
  explicit ChannelLease(ChannelPool& pool) : pool_(&pool), channel_(pool.Acquire()) {}
  ChannelLease(const ChannelLease&) = delete;
  ChannelLease& operator=(const ChannelLease&) = delete;
  ~ChannelLease() { pool_->Release(channel_); }
  size_t channel() const { return channel_; }

 private:
  ChannelPool* pool_;
  size_t channel_;
};

}  // namespace ferry::fetch
