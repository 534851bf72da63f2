// LockFile: byte-range open-file-description locks (F_OFD_SETLK) on one lock file.
//
// OFD locks belong to the open file description, so two LockFiles on the same path conflict
// even inside one process (unlike POSIX record locks), and closing one descriptor does not drop
// the locks of another. Byte 0 is the "open" lock (shared by every process that has an entry
// open, exclusive for an evictor), byte 1 the "write" lock; see docs/format/page-store.md.
//
// Waiting is bounded: Lock() polls with short sleeps until `timeout_ms`, then kTimeout.
// Thread-safety: a LockFile is not shared between threads that lock the same byte concurrently
// (OFD locks do not exclude holders of the same description); callers add a mutex.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/fd.h"
#include "base/result.h"

namespace ferry::cache {

inline constexpr off_t kOpenLockByte = 0;
inline constexpr off_t kWriteLockByte = 1;
// Held exclusively by the process building the entry's replica (docs/format/replica.md).
inline constexpr off_t kBuildLockByte = 2;
// Held shared by an explicit replica build waiting for kBuildLockByte: a background builder
// that sees it gives the file up (replica_build.h).
inline constexpr off_t kBuildWantedByte = 3;

class LockFile {
 public:
  LockFile() = default;
  // Opens (creating, mode 0644) the lock file.
  static Result<LockFile> Open(const std::string& path);

  // Takes a shared (read) or exclusive (write) lock on one byte, waiting up to timeout_ms
  // (0: try once). kTimeout when another description holds a conflicting lock.
  Status Lock(off_t byte, bool exclusive, int timeout_ms);
  Status Unlock(off_t byte);
  // True when another open file description holds a lock on `byte` that conflicts with an
  // exclusive one (F_OFD_GETLK; false when that cannot be told).
  bool HeldElsewhere(off_t byte) const;

  // True when `path_` still names the inode this descriptor has open (an evictor may have
  // removed or replaced it after we opened it).
  bool StillLinked() const;
  // Sets the file's mtime to now (the entry's last-read time).
  void Touch() const;

  bool valid() const { return fd_.valid(); }
  const std::string& path() const { return path_; }

 private:
  LockFile(Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Fd fd_;
  std::string path_;
};

}  // namespace ferry::cache
