#include "xfer/block_queue.h"

#include <sys/mman.h>

#include <cstdlib>

namespace ferry::xfer {

BufferPool::BufferPool(size_t count, size_t buffer_size)
    : count_(count), buffer_size_(buffer_size) {
  constexpr size_t kHuge = 2u << 20;
  mapped_ = (count * buffer_size + kHuge - 1) / kHuge * kHuge;
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::abort();  // out of memory, as operator new would
  }
  (void)::madvise(p, mapped_, MADV_HUGEPAGE);
  base_ = static_cast<uint8_t*>(p);
  free_.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    free_.push_back(static_cast<int>(count - 1 - i));
  }
}

BufferPool::~BufferPool() {
  ::munmap(base_, mapped_);
}

int BufferPool::Acquire(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  MutexLock lock(mu_);
  while (!closed_ && free_.empty()) {
    if (!cv_.WaitUntil(mu_, deadline)) {
      break;
    }
  }
  if (closed_ || free_.empty()) {
    return -1;
  }
  int i = free_.back();
  free_.pop_back();
  return i;
}

int BufferPool::TryAcquire() {
  MutexLock lock(mu_);
  if (closed_ || free_.empty()) {
    return -1;
  }
  int i = free_.back();
  free_.pop_back();
  return i;
}

void BufferPool::Release(int index) {
  {
    MutexLock lock(mu_);
    free_.push_back(index);
  }
  cv_.NotifyOne();
  if (waker_ != nullptr) {
    waker_->Wake();
  }
}

void BufferPool::Close() {
  MutexLock lock(mu_);
  closed_ = true;
  cv_.NotifyAll();
}

void BufferPool::Reopen() {
  MutexLock lock(mu_);
  closed_ = false;
  waker_ = nullptr;
}

size_t BufferPool::free_count() {
  MutexLock lock(mu_);
  return free_.size();
}

}  // namespace ferry::xfer
