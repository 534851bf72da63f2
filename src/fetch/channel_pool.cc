#include "fetch/channel_pool.h"

#include <algorithm>
#include <cassert>

namespace ferry::fetch {

ChannelPool::ChannelPool(size_t channels, bool others_usable)
    : count_(std::max<size_t>(channels, 1)), slots_(count_) {
  for (size_t i = 1; i < slots_.size(); ++i) {
    slots_[i].usable = others_usable;
  }
}

size_t ChannelPool::Acquire(size_t first) {
  MutexLock lock(mu_);
  // The usable channel with the fewest requests in flight; ties go to the lowest index, so a
  // reader with one request at a time stays on channel 0 (one connection, whose TCP window
  // is already open) and other channels carry only concurrent requests.
  size_t best = 0;
  bool found = false;
  for (size_t i = first < slots_.size() ? first : 0; i < slots_.size(); ++i) {
    if (!slots_[i].usable) {
      continue;
    }
    if (!found || slots_[i].in_flight < slots_[best].in_flight) {
      best = i;
      found = true;
    }
  }
  // Channel 0 is the fallback when nothing is marked usable.
  slots_[best].in_flight += 1;
  slots_[best].acquired += 1;
  return best;
}

void ChannelPool::Release(size_t channel) {
  MutexLock lock(mu_);
  assert(channel < slots_.size() && slots_[channel].in_flight > 0);
  slots_[channel].in_flight -= 1;
}

void ChannelPool::SetUsable(size_t channel, bool usable) {
  if (channel == 0 || channel >= count_) {
    return;
  }
  MutexLock lock(mu_);
  slots_[channel].usable = usable;
}

uint64_t ChannelPool::in_flight(size_t channel) const {
  MutexLock lock(mu_);
  return slots_.at(channel).in_flight;
}

uint64_t ChannelPool::acquired(size_t channel) const {
  MutexLock lock(mu_);
  return slots_.at(channel).acquired;
}

}  // namespace ferry::fetch
