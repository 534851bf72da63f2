#include "cache/lock_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "cache/dir_access.h"

namespace ferry::cache {
namespace {

int SetLock(int fd, short type, off_t byte) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = byte;
  fl.l_len = 1;
  fl.l_pid = 0;  // required for OFD locks
  return ::fcntl(fd, F_OFD_SETLK, &fl);
}

}  // namespace

Result<LockFile> LockFile::Open(const std::string& path) {
  // OpenCacheFile hands a lock file root creates in another account's directory to that
  // account: one its owner cannot open for writing would stop its evictions and merges for good.
  Fd fd = FERRY_TRY(OpenCacheFile(path, O_RDWR));
  return LockFile(std::move(fd), path);
}

Status LockFile::Lock(off_t byte, bool exclusive, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto sleep = std::chrono::microseconds(200);
  for (int attempt = 0;; ++attempt) {
    const short type = exclusive ? F_WRLCK : F_RDLCK;
    if (SetLock(fd_.get(), type, byte) == 0) {
      return OkStatus();
    }
    const int err = errno;
    if (err != EAGAIN && err != EACCES && err != EINTR) {
      return IoError("lock " + path_, err);
    }
    if (std::chrono::steady_clock::now() >= deadline || attempt > 100000) {
      return Error(ErrorCode::kTimeout,
                   "lock " + path_ + " busy for " + std::to_string(timeout_ms) + " ms");
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(20000));
  }
}

Status LockFile::Unlock(off_t byte) {
  if (SetLock(fd_.get(), F_UNLCK, byte) != 0) {
    return IoError("unlock " + path_, errno);
  }
  return OkStatus();
}

bool LockFile::HeldElsewhere(off_t byte) const {
  struct flock fl = {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = byte;
  fl.l_len = 1;
  return ::fcntl(fd_.get(), F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

bool LockFile::StillLinked() const {
  struct stat a = {};
  struct stat b = {};
  if (::fstat(fd_.get(), &a) != 0 || ::stat(path_.c_str(), &b) != 0) {
    return false;
  }
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

void LockFile::Touch() const {
  ::futimens(fd_.get(), nullptr);
}

}  // namespace ferry::cache
