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
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "xfer/block_io.h"

namespace ferry::xfer {

class BufferPool {
 public:
  BufferPool(size_t count, size_t buffer_size);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer's index, or -1 after timeout_ms or once closed.
  int Acquire(int timeout_ms);
  int TryAcquire();
  void Release(int index);
  void Close();
  // Opens a closed pool again for a new user; every buffer must be free.
  void Reopen();

  uint8_t* data(int index) { return base_ + static_cast<size_t>(index) * buffer_size_; }
  size_t buffer_size() const { return buffer_size_; }
  size_t count() const { return count_; }
  size_t free_count();
  // Woken on every Release (a stage that waits on several sources polls it).
  void set_waker(const Waker* waker) { waker_ = waker; }

 private:
  uint8_t* base_ = nullptr;
  size_t mapped_ = 0;
  size_t count_;
  size_t buffer_size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> free_;  // capacity == count, never reallocates
  bool closed_ = false;
  const Waker* waker_ = nullptr;
};

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : ring_(capacity) {}

  // Blocks while full (bounded by timeout_ms); false on timeout or when closed.
  bool Push(const T& v, int timeout_ms) {
    std::unique_lock lock(mu_);
    if (!not_full_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                            [&] { return closed_ || count_ < ring_.size(); })
        || closed_) {
      return false;
    }
    ring_[(head_ + count_) % ring_.size()] = v;
    ++count_;
    not_empty_.notify_one();
    if (waker_ != nullptr) {
      waker_->Wake();
    }
    return true;
  }

  // Blocks while empty (bounded by timeout_ms); nullopt on timeout or when closed and empty.
  std::optional<T> Pop(int timeout_ms) {
    std::unique_lock lock(mu_);
    not_empty_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                        [&] { return closed_ || count_ > 0; });
    return PopLocked();
  }

  std::optional<T> TryPop() {
    std::lock_guard lock(mu_);
    return PopLocked();
  }

  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  bool closed() {
    std::lock_guard lock(mu_);
    return closed_;
  }
  size_t size() {
    std::lock_guard lock(mu_);
    return count_;
  }
  void set_waker(const Waker* waker) { waker_ = waker; }

 private:
  std::optional<T> PopLocked() {
    if (count_ == 0) {
      return std::nullopt;
    }
    T v = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --count_;
    not_full_.notify_one();
    return v;
  }

  std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::vector<T> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
  bool closed_ = false;
  const Waker* waker_ = nullptr;
};

}  // namespace ferry::xfer
