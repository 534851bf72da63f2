#include "cache/testing/memory_origin.h"

#include <cstring>
#include <thread>

namespace ferry::cache {

MemoryOrigin::MemoryOrigin(std::vector<uint8_t> bytes, int64_t mtime, size_t channels)
    : bytes_data_(std::move(bytes)),
      mtime_(mtime),
      channels_(std::max<size_t>(channels, 1)),
      per_channel_(channels_) {}

Result<OriginInfo> MemoryOrigin::Stat() {
  stat_calls_.fetch_add(1);
  MutexLock lock(mu_);
  if (stat_failure_) {
    return Error(*stat_failure_, "injected stat failure");
  }
  return OriginInfo{bytes_data_.size(), mtime_};
}

void MemoryOrigin::Read(std::span<OriginRead> reads) {
  {
    MutexLock lock(mu_);
    ++held_;
    while (hold_) {
      released_.Wait(mu_);
    }
    --held_;
  }
  if (const int64_t d = delay_us_.load(); d > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(d));
  }
  for (OriginRead& read : reads) {
    read_calls_.fetch_add(1);
    per_channel_[std::min(read.channel, channels_ - 1)].fetch_add(1);
    int left = fail_reads_.load();
    bool fail = false;
    while (left > 0) {
      if (fail_reads_.compare_exchange_weak(left, left - 1)) {
        fail = true;
        break;
      }
    }
    for (io::ReadRequest& r : read.ranges) {
      ranges_.fetch_add(1);
      if (fail) {
        r.status = Error(static_cast<ErrorCode>(fail_code_.load()), "injected origin failure");
        continue;
      }
      if (r.offset > bytes_data_.size() || r.dest.size() > bytes_data_.size() - r.offset) {
        r.status = Error(ErrorCode::kShortRead, "read past the end of the memory origin");
        continue;
      }
      std::memcpy(r.dest.data(), bytes_data_.data() + r.offset, r.dest.size());
      bytes_.fetch_add(r.dest.size());
      r.status = OkStatus();
    }
  }
}

void MemoryOrigin::FailNextReads(int count, ErrorCode code) {
  fail_code_.store(static_cast<int>(code));
  fail_reads_.store(count);
}

void MemoryOrigin::FailStat(ErrorCode code) {
  MutexLock lock(mu_);
  stat_failure_ = code;
}

void MemoryOrigin::HoldReads(bool hold) {
  {
    MutexLock lock(mu_);
    hold_ = hold;
  }
  released_.NotifyAll();
}

size_t MemoryOrigin::reads_held() const {
  MutexLock lock(mu_);
  return hold_ ? held_ : 0;
}

void MemoryOrigin::ClearStatFailure() {
  MutexLock lock(mu_);
  stat_failure_.reset();
}

void MemoryOrigin::Replace(std::vector<uint8_t> bytes, int64_t mtime) {
  MutexLock lock(mu_);
  bytes_data_ = std::move(bytes);
  mtime_ = mtime;
}

uint64_t MemoryOrigin::channel_calls(size_t channel) const {
  return per_channel_.at(channel).load();
}

}  // namespace ferry::cache
