// MemoryOrigin: an Origin over bytes in memory, with fault injection, for tests and benchmarks
// of the cache without a network.
//
// Faults (all thread-safe to set while reads run):
// - FailNextReads(n, code): the next n Read() calls fail every range with `code`.
// - SetReadDelay(d): every Read() sleeps d first (to make misses overlap in time).
// - HoldReads(true): Read() calls wait until HoldReads(false) (reads_held() counts them), so a
//   test can make a fetch stay in flight until it has seen what it waits for.
// - FailStat(code) / ClearStatFailure().
// Counters: Read() calls, ranges, bytes delivered; per channel calls.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/mutex.h"
#include "cache/origin.h"

namespace ferry::cache {

class MemoryOrigin final : public Origin {
 public:
  explicit MemoryOrigin(std::vector<uint8_t> bytes,
                        int64_t mtime = 1700000000,
                        size_t channels = 1);

  Result<OriginInfo> Stat() override;
  void Read(std::span<OriginRead> reads) override;
  size_t channels() const override { return channels_; }
  bool channel_ready(size_t channel) const override { return channel < channels_; }

  void FailNextReads(int count, ErrorCode code = ErrorCode::kIo);
  void SetReadDelay(std::chrono::microseconds delay) { delay_us_ = delay.count(); }
  void FailStat(ErrorCode code);
  void HoldReads(bool hold);
  size_t reads_held() const;
  void ClearStatFailure();
  // Changes the content (and mtime): a new version of the remote file.
  void Replace(std::vector<uint8_t> bytes, int64_t mtime);

  uint64_t stat_calls() const { return stat_calls_.load(); }
  uint64_t read_calls() const { return read_calls_.load(); }  // OriginRead count
  uint64_t ranges() const { return ranges_.load(); }
  uint64_t bytes() const { return bytes_.load(); }
  uint64_t channel_calls(size_t channel) const;
  const std::vector<uint8_t>& data() const { return bytes_data_; }

 private:
  std::vector<uint8_t> bytes_data_;
  int64_t mtime_;
  size_t channels_;
  std::atomic<int> fail_reads_{0};
  std::atomic<int> fail_code_{0};
  std::atomic<int64_t> delay_us_{0};
  mutable Mutex mu_;
  CondVar released_;
  std::optional<ErrorCode> stat_failure_ FERRY_GUARDED_BY(mu_);
  bool hold_ FERRY_GUARDED_BY(mu_) = false;
  size_t held_ FERRY_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> stat_calls_{0};
  std::atomic<uint64_t> read_calls_{0};
  std::atomic<uint64_t> ranges_{0};
  std::atomic<uint64_t> bytes_{0};
  std::vector<std::atomic<uint64_t>> per_channel_;
};

}  // namespace ferry::cache
