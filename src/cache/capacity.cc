#include "cache/capacity.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <vector>

#include "cache/entry_store.h"
#include "cache/lock_file.h"

namespace ferry::cache {
namespace {

int64_t RealNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Removes one entry if no process has it open. True when removed.
bool TryRemove(const EntryListing& e, bool& was_open) {
  was_open = false;
  auto lock = LockFile::Open(e.paths.lock());
  if (!lock) {
    return false;
  }
  if (!lock->Lock(kOpenLockByte, /*exclusive=*/true, 0)
      || !lock->Lock(kWriteLockByte, /*exclusive=*/true, 0)) {
    was_open = true;
    return false;
  }
  if (!lock->StillLinked()) {
    return false;  // someone else removed and recreated it meanwhile
  }
  if (!RemoveEntryFiles(e.paths)) {
    return false;
  }
  ::unlink(e.paths.pin().c_str());
  // Unlink the lock file while holding it: a process that opened the old file will see that
  // it is no longer linked after locking and start over.
  ::unlink(e.paths.lock().c_str());
  return true;
}

}  // namespace

Result<Usage> MeasureUsage(const std::string& cache_dir) {
  auto entries = FERRY_TRY(ScanEntries(cache_dir));
  Usage u;
  for (const EntryListing& e : entries) {
    u.entries += e.has_index ? 1u : 0u;
    u.disk_bytes += e.disk_bytes;
    u.inodes += e.inodes;
  }
  u.listed = entries.size();
  return u;
}

Result<uint64_t> FreeBytes(const std::string& cache_dir) {
  struct statvfs st = {};
  if (::statvfs(cache_dir.c_str(), &st) != 0) {
    return IoError("statvfs " + cache_dir, errno);
  }
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

Result<uint64_t> FreeInodes(const std::string& cache_dir) {
  struct statvfs st = {};
  if (::statvfs(cache_dir.c_str(), &st) != 0) {
    return IoError("statvfs " + cache_dir, errno);
  }
  return st.f_files == 0 ? UINT64_MAX : static_cast<uint64_t>(st.f_favail);
}

namespace {

// What eviction watches while it removes entries: usage and the file system's free space, in
// bytes and in inodes, updated by each removal without measuring again.
struct Level {
  uint64_t bytes = 0;
  uint64_t free_bytes = UINT64_MAX;
  uint64_t listed = 0;
  uint64_t inodes = 0;
  uint64_t free_inodes = UINT64_MAX;

  bool Over(const EvictOptions& o) const {
    return bytes > o.target_bytes || free_bytes < o.min_free_bytes || listed > o.target_entries
           || free_inodes < o.min_free_inodes;
  }
  void Remove(const EntryListing& e) {
    bytes -= e.disk_bytes;
    free_bytes = free_bytes == UINT64_MAX ? free_bytes : free_bytes + e.disk_bytes;
    listed -= 1;
    inodes -= e.inodes;
    free_inodes = free_inodes == UINT64_MAX ? free_inodes : free_inodes + e.inodes;
  }
};

Level Measure(const std::string& cache_dir, const std::vector<EntryListing>& entries) {
  Level l;
  for (const EntryListing& e : entries) {
    l.bytes += e.disk_bytes;
    l.inodes += e.inodes;
  }
  l.listed = entries.size();
  l.free_bytes = FreeBytes(cache_dir).value_or(UINT64_MAX);
  l.free_inodes = FreeInodes(cache_dir).value_or(UINT64_MAX);
  return l;
}

}  // namespace

Result<EvictResult> Evict(const std::string& cache_dir, const EvictOptions& options) {
  EvictResult result;
  LockFile dir_lock = FERRY_TRY(LockFile::Open(cache_dir + "/cache.lock"));
  if (!dir_lock.Lock(0, /*exclusive=*/true, options.lock_wait_ms)) {
    result.busy = true;
    return result;
  }
  auto entries = FERRY_TRY(ScanEntries(cache_dir));
  std::sort(entries.begin(), entries.end(), [](const EntryListing& a, const EntryListing& b) {
    return a.last_read_ns < b.last_read_ns;
  });
  Level level = Measure(cache_dir, entries);
  const int64_t cutoff =
      options.older_than_s > 0 ? RealNowNs() - options.older_than_s * 1'000'000'000 : INT64_MIN;
  uint64_t remaining = 0;
  for (const EntryListing& e : entries) {
    const bool old = e.last_read_ns < cutoff;
    if (!(options.everything || level.Over(options) || old)) {
      remaining += e.has_index ? 1u : 0u;
      continue;
    }
    if (e.pinned && !(options.everything && options.include_pinned)) {
      result.skipped_pinned += 1;
      remaining += e.has_index ? 1u : 0u;
      continue;
    }
    bool was_open = false;
    if (TryRemove(e, was_open)) {
      result.evicted += e.has_index ? 1u : 0u;
      result.freed_bytes += e.disk_bytes;
      level.Remove(e);
    } else {
      result.skipped_open += was_open ? 1u : 0u;
      remaining += e.has_index ? 1u : 0u;
    }
  }
  result.after.entries = remaining;
  result.after.disk_bytes = level.bytes;
  result.after.listed = level.listed;
  result.after.inodes = level.inodes;
  result.still_over = level.Over(options);
  return result;
}

}  // namespace ferry::cache
