// BlockIo: asynchronous block reads, writes and syncs at offsets, on io_uring (liburing 2.3
// features only) with a synchronous fallback where io_uring is unavailable (no kernel support,
// or a seccomp filter refusing it); fallback_reason() says why.
//
// Usage from one thread (not thread-safe):
//   Prep*() queues an operation identified by a caller tag (false when the queue is full);
//   Submit() hands them to the kernel (the fallback executes them here); Reap() collects
//   completions without blocking; event_fd() becomes readable when a completion is posted, so
//   a loop can poll it together with its own wake-up fd (Waker).
// A completion's result is the byte count or -errno, as the syscall would give; short reads
// and writes are the caller's to continue.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/result.h"

namespace ferry::xfer {

struct IoCompletion {
  uint64_t tag = 0;
  int32_t result = 0;
};

class BlockIo {
 public:
  static Result<std::unique_ptr<BlockIo>> Create(unsigned queue_depth, bool allow_uring = true);
  virtual ~BlockIo() = default;

  virtual bool PrepRead(int fd, void* buf, uint32_t len, uint64_t offset, uint64_t tag) = 0;
  virtual bool PrepWrite(int fd, const void* buf, uint32_t len, uint64_t offset, uint64_t tag) = 0;
  virtual bool PrepFsync(int fd, bool datasync, uint64_t tag) = 0;
  virtual Status Submit() = 0;
  // Appends every available completion to out; returns how many.
  virtual size_t Reap(std::vector<IoCompletion>& out) = 0;
  // -1 in the fallback (its completions are ready right after Submit()).
  virtual int event_fd() const = 0;
  // Operations submitted and not yet reaped.
  virtual unsigned inflight() const = 0;
  virtual bool uses_uring() const = 0;
  const std::string& fallback_reason() const { return fallback_reason_; }

 protected:
  std::string fallback_reason_;
};

// An eventfd to wake a thread that waits in Wait() (several writers, one waiter).
class Waker {
 public:
  Waker();
  void Wake() const;
  // Waits until Wake() was called, `other_fd` (if >= 0) is readable, or timeout_ms passed;
  // clears the wake-up.
  void Wait(int other_fd, int timeout_ms) const;

 private:
  Fd fd_;
};

}  // namespace ferry::xfer
