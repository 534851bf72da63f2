// CopyBudget: the memory that every copy served through (copy_through.h) may hold at once, one
// per proxy (`ferry.copy_memory`). A CopyStream keeps up to 80 MiB of blocks per copy (read
// ahead, being read, kept for pages read again), so without a cap 50 concurrent xrdcp copies
// could hold 4 GB.
//
// A stream charges a block's bytes before it allocates them and releases them when it drops the
// block. A charge that would take the held bytes past the limit is refused, and the stream
// then does without: a block ahead is not fetched (the copy reads ahead less), a block a read
// needs is not made (its bytes are read straight into the client's buffer, as XCache reads
// direct when its RAM is full), a block read whole is not kept. So the held bytes never pass
// the limit, and a copy never fails nor waits for memory: it always reads what it needs.
//
// Fair share: a stream that holds more than limit / (streams using the budget) fetches no
// block ahead and keeps no block read whole, so a few early copies cannot take the budget from
// later ones for good.
//
// Thread-safety: all methods may be called concurrently (atomics only).
#pragma once

#include <atomic>
#include <cstdint>

namespace ferry::proxy {

class CopyBudget {
 public:
  explicit CopyBudget(uint64_t limit) : limit_(limit) {}
  ~CopyBudget() = default;
  CopyBudget(const CopyBudget&) = delete;
  CopyBudget& operator=(const CopyBudget&) = delete;

  // Charges `bytes` when the held bytes stay within the limit; false (nothing charged, counted
  // as refused) otherwise.
  bool TryTake(uint64_t bytes);
  // Gives back bytes TryTake charged.
  void Release(uint64_t bytes);
  // A stream starts (Join) and stops (Leave) using the budget; the fair share counts them.
  void Join() { streams_.fetch_add(1, std::memory_order_relaxed); }
  void Leave() { streams_.fetch_sub(1, std::memory_order_relaxed); }
  // limit / (streams joined), the whole limit when none.
  uint64_t share() const;

  uint64_t limit() const { return limit_; }
  uint64_t held() const { return held_.load(std::memory_order_relaxed); }
  // The most bytes held at once since the start.
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // Charges refused: blocks not fetched ahead, not made for a read, not kept.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> held_{0};
  std::atomic<uint64_t> peak_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> streams_{0};
};

}  // namespace ferry::proxy
