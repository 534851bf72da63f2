// Capacity of a cache directory: usage, free space, and eviction of whole entries.
//
// Two resources are kept under limits: bytes (a size cap and a free-space floor) and inodes (a
// cap on entries and a free-inode floor), so that many small files cannot fill the file
// system's inode table while its bytes are still free.
//
// Eviction removes least-recently-read entries first (the mtime of KEY.lock, set at every open
// and close), never a pinned one (unless asked), and never one that any process has open: it
// takes the entry's open lock (byte 0) exclusively without waiting and skips the entry when
// that fails. One process evicts at a time (OFD lock on DIR/cache.lock).
// Thread-safety: functions may run concurrently in several threads and processes.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace ferry::cache {

struct Usage {
  uint64_t entries = 0;
  uint64_t disk_bytes = 0;  // allocated bytes of every entry's files
  uint64_t inodes = 0;      // files of every entry (listed ones too, leftovers included)
  uint64_t listed = 0;      // entries with any file (with an index or not)
};

Result<Usage> MeasureUsage(const std::string& cache_dir);
// Bytes available to unprivileged users on the cache's filesystem (statvfs f_bavail).
Result<uint64_t> FreeBytes(const std::string& cache_dir);
// Inodes available to unprivileged users there (statvfs f_favail); UINT64_MAX for a file
// system that does not count them (f_files 0: btrfs, some network file systems).
Result<uint64_t> FreeInodes(const std::string& cache_dir);

struct EvictOptions {
  // Evict (oldest first) while usage exceeds this; UINT64_MAX: no size target.
  uint64_t target_bytes = UINT64_MAX;
  // Also while the filesystem has less free space than this.
  uint64_t min_free_bytes = 0;
  // Also while more entries than this are listed (leftovers without an index count: they hold
  // inodes too); UINT64_MAX: no cap.
  uint64_t target_entries = UINT64_MAX;
  // Also while the filesystem has fewer free inodes than this.
  uint64_t min_free_inodes = 0;
  // Also every entry last read before now - older_than_s (0: no age criterion).
  int64_t older_than_s = 0;
  bool everything = false;      // evict all entries that are not open (clear)
  bool include_pinned = false;  // with everything: pinned ones too
  int lock_wait_ms = 0;         // wait for DIR/cache.lock; 0 = give up if another evicts
};

struct EvictResult {
  uint64_t evicted = 0;
  uint64_t freed_bytes = 0;
  uint64_t skipped_open = 0;  // wanted but open in some process
  uint64_t skipped_pinned = 0;
  Usage after;
  bool still_over = false;  // a target or floor (bytes or inodes) still not met
  bool busy = false;        // another process was evicting; nothing done
};

Result<EvictResult> Evict(const std::string& cache_dir, const EvictOptions& options);

}  // namespace ferry::cache
