// The bounded queues between the transfer stages.
//
// BufferPool owns a fixed set of equally sized, 4 KiB-aligned buffers (for O_DIRECT) in one
// anonymous mapping (transparent huge pages requested: fewer page faults and cheaper O_DIRECT
// pinning) and hands out their indices; nothing is allocated after construction. BoundedQueue<T> is
// a fixed capacity multi-producer multi-consumer FIFO (a ring under a mutex) for small trivially
// copyable items such as block descriptors.
// Both are thread-safe. Every wait is bounded by the caller's timeout; Close() wakes all
// waiters, after which Acquire/Pop fail once nothing is left.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/mutex.h"
#include "xfer/block_io.h"

namespace ferry::xfer {

class BufferPool {
 public:
  BufferPool(size_t count, size_t buffer_size);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer's index, or -1 after timeout_ms or once closed.
  int Acquire(int timeout_ms) FERRY_EXCLUDES(mu_);
  int TryAcquire() FERRY_EXCLUDES(mu_);
  void Release(int index) FERRY_EXCLUDES(mu_);
  void Close() FERRY_EXCLUDES(mu_);
  // Opens a closed pool again for a new user; every buffer must be free.
  void Reopen() FERRY_EXCLUDES(mu_);

  uint8_t* data(int index) { return base_ + static_cast<size_t>(index) * buffer_size_; }
  size_t buffer_size() const { return buffer_size_; }
  size_t count() const { return count_; }
  size_t free_count() FERRY_EXCLUDES(mu_);
  // Woken on every Release (a stage that waits on several sources polls it).
  void set_waker(const Waker* waker) { waker_ = waker; }

 private:
  uint8_t* base_ = nullptr;
  size_t mapped_ = 0;
  size_t count_;
  size_t buffer_size_;
  Mutex mu_;
  CondVar cv_;
  std::vector<int> free_ FERRY_GUARDED_BY(mu_);  // capacity == count, never reallocates
  bool closed_ FERRY_GUARDED_BY(mu_) = false;
  const Waker* waker_ = nullptr;
};

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : ring_(capacity) {}

  // Blocks while full (bounded by timeout_ms); false on timeout or when closed.
  bool Push(const T& v, int timeout_ms) FERRY_EXCLUDES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    MutexLock lock(mu_);
    while (!closed_ && count_ == ring_.size()) {
      if (!not_full_.WaitUntil(mu_, deadline)) {
        break;
      }
    }
    if (closed_ || count_ == ring_.size()) {
      return false;
    }
    ring_[(head_ + count_) % ring_.size()] = v;
    ++count_;
    not_empty_.NotifyOne();
    if (waker_ != nullptr) {
      waker_->Wake();
    }
    return true;
  }

  // Blocks while empty (bounded by timeout_ms); nullopt on timeout or when closed and empty.
  std::optional<T> Pop(int timeout_ms) FERRY_EXCLUDES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    MutexLock lock(mu_);
    while (!closed_ && count_ == 0) {
      if (!not_empty_.WaitUntil(mu_, deadline)) {
        break;
      }
    }
    return PopLocked();
  }

  std::optional<T> TryPop() FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return PopLocked();
  }

  void Close() FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    closed_ = true;
    not_empty_.NotifyAll();
    not_full_.NotifyAll();
  }

  bool closed() FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return closed_;
  }
  size_t size() FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return count_;
  }
  void set_waker(const Waker* waker) { waker_ = waker; }

 private:
  std::optional<T> PopLocked() FERRY_REQUIRES(mu_) {
    if (count_ == 0) {
      return std::nullopt;
    }
    T v = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --count_;
    not_full_.NotifyOne();
    return v;
  }

  Mutex mu_;
  CondVar not_empty_;
  CondVar not_full_;
  std::vector<T> ring_ FERRY_GUARDED_BY(mu_);
  size_t head_ FERRY_GUARDED_BY(mu_) = 0;
  size_t count_ FERRY_GUARDED_BY(mu_) = 0;
  bool closed_ FERRY_GUARDED_BY(mu_) = false;
  const Waker* waker_ = nullptr;
};

}  // namespace ferry::xfer
