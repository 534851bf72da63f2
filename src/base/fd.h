// RAII owner of a POSIX file descriptor. Move-only; closes on destruction.
#pragma once

#include <string>
#include <utility>

#include "base/result.h"

namespace ferry {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept;
  ~Fd();

  // open(2) with O_CLOEXEC added. Errors carry errno and the path.
  static Result<Fd> Open(const std::string& path, int flags, unsigned mode = 0644);

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release() { return std::exchange(fd_, -1); }
  // Closes now; reports the close(2) error, which matters after writes.
  Status Close();

 private:
  int fd_ = -1;
};

// Reads exactly dest.size() bytes at offset, retrying on EINTR and short reads.
// kShortRead when the file ends first.
Status PreadFull(int fd, void* dest, size_t size, uint64_t offset);
// Writes all bytes at offset, retrying on EINTR and short writes. ENOSPC maps to kNoSpace.
Status PwriteFull(int fd, const void* src, size_t size, uint64_t offset);
// Size of an open file (fstat).
Result<uint64_t> FileSize(int fd);

}  // namespace ferry
