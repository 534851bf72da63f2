#include "base/fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace ferry {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

Result<Fd> Fd::Open(const std::string& path, int flags, unsigned mode) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int e = errno;
    ErrorCode code = e == ENOENT                   ? ErrorCode::kNotFound
                     : (e == EACCES || e == EPERM) ? ErrorCode::kPermission
                                                   : ErrorCode::kIo;
    return Error(code, "cannot open " + path, e);
  }
  return Fd(fd);
}

Status Fd::Close() {
  if (fd_ < 0) {
    return OkStatus();
  }
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && errno != EINTR) {
    return IoError("close failed", errno);
  }
  return OkStatus();
}

Status PreadFull(int fd, void* dest, size_t size, uint64_t offset) {
  auto* out = static_cast<unsigned char*>(dest);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return IoError(
          "pread of " + std::to_string(size) + " bytes at " + std::to_string(offset) + " failed",
          errno);
    }
    if (n == 0) {
      return Error(ErrorCode::kShortRead, "end of file after " + std::to_string(done) + " of "
                                              + std::to_string(size) + " bytes at offset "
                                              + std::to_string(offset));
    }
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

Status PwriteFull(int fd, const void* src, size_t size, uint64_t offset) {
  const auto* in = static_cast<const unsigned char*>(src);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pwrite(fd, in + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      int e = errno;
      return Error(
          e == ENOSPC || e == EDQUOT ? ErrorCode::kNoSpace : ErrorCode::kIo,
          "pwrite of " + std::to_string(size) + " bytes at " + std::to_string(offset) + " failed",
          e);
    }
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

Result<uint64_t> FileSize(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return IoError("fstat failed", errno);
  }
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace ferry
