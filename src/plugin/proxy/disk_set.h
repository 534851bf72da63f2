// DiskSet: the site proxy's cache disks (ferry.dir and ferry.data_dirs; `ferry proxy run --dir`
// given several times). Each disk is a complete page store (docs/format/page-store.md) with its
// own marker, entries, stats, capacity limits and eviction: one cache::Cache each. The disks
// share one read-ahead engine (one budget, one branch memory: cache::Config::prefetcher).
//
// Where an entry lives: on one disk. Open looks for it on every disk in service (an entry this
// process has open or queued, else its index file; the first disk that has it wins), and a new
// entry goes to the disk in service that is under its limits (its cache accepts new entries,
// free bytes above its min_free, free inodes above min_free_inodes) with the most free bytes
// per handle open on it, plus one: free space spreads the entries, open handles (reads and
// writes in flight) spread the load. A disk over its limits is used only when every disk is;
// its cache then reads the file through uncached, as a single-disk proxy does.
//
// Water marks, per disk (DiskOptions): above high_percent of its file system in use, the
// disk's cache evicts until at most low_percent is in use (cache::Config::min_free_bytes and
// evict_to_free_bytes, computed from each disk's own size at start); max_size, min_free,
// max_entries and min_free_inodes apply to each disk on its own.
//
// Out of service: a cache fault on a disk (cache::Config::on_fault) with errno EIO, EROFS,
// ENXIO, ENODEV, ENOTCONN or ESTALE, or ENOSPC that its file system's free space does not
// explain (UnexplainedNoSpace), or after which its marker is gone or its file system is
// read-only; or the health check (Check, the status thread: every ferry.status_ms) finding the
// marker gone or the file system read-only. Then: one warning line, the disk's `up` 0, its
// `faults` and `outages` counted (Snapshot; proxy-status.json "disks"), and new opens skip it:
// its entries are read from the origin and placed on another disk. Handles already open on it
// fail open by themselves at their next fault; whatever they serve meanwhile has passed its
// CRC32C check, as every cached byte does. Retried every retry_s (doubled, up to 64 times,
// for a disk that fails again within ten intervals of its return): the marker must still be
// there (a directory that vanished is never created again: it may be an empty mount point now),
// the file system writable and a probe file written, synced and removed; then it is back in
// service (one info line) with the same cache object.
//
// A disk other than the first that cannot be used at the start (missing: it is never created
// here, not a cache, not writable) does not stop the proxy: it starts out of service, and a
// retry that finds its marker makes its cache then. The first disk, the home, must work (and
// is created when missing, as a single cache directory is).
//
// Lifetime: every handle opened through the set must be closed before it is destroyed (the
// caches' fault hooks point at it). Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "cache/cache.h"
#include "cache/config.h"

namespace ferry::proxy {

struct DiskOptions {
  // Per-disk water marks in percent of the file system in use; 0: none (only min_free).
  uint32_t high_percent = 0;
  uint32_t low_percent = 0;
  // Seconds between probes of a disk out of service (0: at every Check; tests).
  uint32_t retry_s = 60;
};

// One disk as the status file shows it.
struct DiskInfo {
  std::string dir;
  bool up = true;
  std::string reason;    // why it is out of service (empty while up)
  uint64_t faults = 0;   // disk faults seen (I/O errors, read-only, marker gone)
  uint64_t outages = 0;  // times taken out of service
  int64_t open = 0;      // handles open on it now
  uint64_t placed = 0;   // new entries placed on it
  uint64_t free_bytes = 0;
  uint64_t free_inodes = 0;
  double down_since_unix = 0;  // 0 while up
  uint64_t writeback_queued_bytes = 0;
};

// A file system's room as statvfs tells it (all zero when it cannot be asked).
struct DiskSpace {
  uint64_t size_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t free_inodes = 0;  // UINT64_MAX on a file system that does not count inodes
};

// Why ENOSPC on a file system with room `space` means its device failed ("" when the room
// explains it: under a tenth free, under twice min_free_bytes, or few inodes left): writes
// fail while statvfs shows room, as on a thin-provisioned or loop device whose store is full.
std::string UnexplainedNoSpace(const DiskSpace& space,
                               uint64_t min_free_bytes,
                               uint64_t min_free_inodes);
// "why" when errno `err` means the disk itself failed, else nullptr.
const char* DiskErrnoName(int err);
// Why `dir` cannot serve as a cache disk right now ("" when it can): its marker is gone or its
// file system is read-only.
std::string DiskHealth(const std::string& dir);

class DiskSet {
 public:
  // A cache on each of `dirs` (the first is the proxy's home: status file, access log), set up
  // from `base` (its dir ignored). Errors: a directory that cannot be prepared.
  static Result<std::unique_ptr<DiskSet>> Create(const cache::Config& base,
                                                 const std::vector<std::string>& dirs,
                                                 const DiskOptions& options);
  DiskSet(const DiskSet&) = delete;
  DiskSet& operator=(const DiskSet&) = delete;
  ~DiskSet();

  struct Opened {
    std::unique_ptr<cache::CachedFile> file;
    int disk = -1;  // the disk it is counted on (Closed), -1: none (every disk out of service)
  };
  // Opens `url` through the disk that holds its entry, else the one placement picks (above);
  // with every disk out of service, a pass-through handle. Errors are the origin's.
  Result<Opened> Open(const std::string& url,
                      std::shared_ptr<cache::Origin> origin,
                      const cache::OpenOptions& options);
  // A handle Open returned on `disk` closed.
  void Closed(int disk);

  // The directories in service that may hold `key`, in the order Open looks (ProxyOss::Stat).
  std::vector<std::string> DirsInService() const;
  // Health of the disks in service and the probe of those due for a retry (status thread).
  void Check();
  // Changes whenever a disk leaves or re-enters service.
  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }
  std::vector<DiskInfo> Snapshot() const;
  size_t size() const { return disks_.size(); }
  size_t up() const;
  // The cache of disk `i` (null for a disk that could not be used since the start).
  cache::Cache* cache(size_t i) { return disks_[i]->cache.load(std::memory_order_acquire); }
  // Every disk's write-behind queue has stored and published everything it was given.
  bool WritebackIdle() const;
  uint64_t WritebackQueuedBytes() const;
  // The shared read-ahead engine, null until a handle asked for read-ahead.
  const readahead::Prefetcher* prefetcher() const;
  // Stops read-ahead and drains every disk's queue (process exit).
  void Shutdown();

  // The disk a fault of its cache is reported for (cache::Config::on_fault), public for tests.
  void OnFault(size_t disk, const Error& why);

 private:
  struct Disk {
    std::string dir;
    cache::Config config;  // its cache's, for a cache made at a retry
    // Set once (at Create, or at the first retry that works when the disk could not be used
    // at the start) and never changed: readers load it without the lock.
    std::atomic<cache::Cache*> cache{nullptr};
    uint64_t min_free_bytes = 0;
    std::atomic<bool> up{true};
    std::atomic<int64_t> open{0};
    std::atomic<uint64_t> faults{0};
    std::atomic<uint64_t> outages{0};
    std::atomic<uint64_t> placed{0};
    mutable Mutex mu;
    std::shared_ptr<cache::Cache> owner FERRY_GUARDED_BY(mu);  // what `cache` points at
    std::string reason FERRY_GUARDED_BY(mu);
    double down_since_unix FERRY_GUARDED_BY(mu) = 0;
    int64_t retry_at_ms FERRY_GUARDED_BY(mu) = 0;
    int64_t up_since_ms FERRY_GUARDED_BY(mu) = 0;  // back in service then (0: since the start)
    int backoff FERRY_GUARDED_BY(mu) = 0;          // retries every retry_s << backoff
  };

  DiskSet(const cache::Config& base, const DiskOptions& options);
  // A cache on `dir`; the first disk must work, the others that do not are out of service from
  // the start (retried like any other).
  Status AddDisk(const std::string& dir);
  // Makes the cache of a disk that had none (Retry).
  Status MakeCache(Disk& d);
  // The disk in service holding `key`, or -1.
  int Find(const std::string& key) const;
  // The disk a new entry goes to, or -1 when none is in service.
  int Place() const;
  void TakeOut(Disk& d, const std::string& why);
  static constexpr int kMaxBackoff = 6;
  int64_t RetryIntervalMs(const Disk& d) const FERRY_REQUIRES(d.mu);
  void Retry(Disk& d, int64_t now_ms);

  const cache::Config base_;
  const DiskOptions options_;
  std::shared_ptr<readahead::Prefetcher> prefetcher_;
  std::vector<std::unique_ptr<Disk>> disks_;  // fixed after Create
  std::atomic<uint64_t> generation_{0};
};

}  // namespace ferry::proxy
