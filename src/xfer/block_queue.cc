#include "xfer/block_queue.h"

namespace ferry::xfer {

BufferPool::BufferPool(size_t count, size_t buffer_size) : buffer_size_(buffer_size) {
  buffers_.reserve(count);
  free_.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    buffers_.emplace_back(buffer_size);
    free_.push_back(static_cast<int>(count - 1 - i));
  }
}

int BufferPool::Acquire(int timeout_ms) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                    [&] { return closed_ || !free_.empty(); })
      || closed_) {
    return -1;
  }
  int i = free_.back();
  free_.pop_back();
  return i;
}

int BufferPool::TryAcquire() {
  std::lock_guard lock(mu_);
  if (closed_ || free_.empty()) {
    return -1;
  }
  int i = free_.back();
  free_.pop_back();
  return i;
}

void BufferPool::Release(int index) {
  {
    std::lock_guard lock(mu_);
    free_.push_back(index);
  }
  cv_.notify_one();
  if (waker_ != nullptr) {
    waker_->Wake();
  }
}

void BufferPool::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

size_t BufferPool::free_count() {
  std::lock_guard lock(mu_);
  return free_.size();
}

}  // namespace ferry::xfer
