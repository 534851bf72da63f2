// The client cache engine: Cache (one per cache directory and process) and CachedFile (one per
// opened remote file). No XRootD header: remote bytes come from an Origin.
//
//   auto cache = Cache::Get(config);                       // shared per directory
//   auto file = cache->Open("root://host//f.root", origin);  // origin: e.g. XrdCl-backed
//   file->ReadV(requests);                                // hits from disk, misses from origin
//
// Read path (docs/format/page-store.md, ../shared/docs/DESIGN.md):
// - Held bytes are read from the data file / fragment log and verified against their CRC32C;
//   a mismatch is counted, the page forgotten and refetched. Hits allocate nothing.
// - Missing bytes are planned (fetch::Planner: exact bytes by default, gaps <= iogap bridged,
//   packed into vector reads within XRootD's limits), joined with identical misses other threads
//   already have in flight, fetched over the origin's channels (least loaded first), retried on
//   transient errors with jittered backoff, copied to the caller, and then handed to the
//   write-behind queue.
// - Fail-open: a cache fault (disk error, full disk, corrupt index, lock timeout, entry recreated
//   elsewhere) makes the handle read from the origin; the caller sees the origin's bytes or the
//   origin's own error, never a cache error.
// Admission: a new entry is created only while the directory is under max_size and the
// filesystem above min_free (after evicting least-recently-read entries nobody has open);
// otherwise the handle passes through and the refusal is counted.
//
// Thread-safety: Cache and CachedFile are thread-safe; one CachedFile may be read from many
// threads at once. Lifetime: a CachedFile keeps its Cache alive; the Cache destructor drains
// the write-behind queue (bounded) and merges the counters into the directory.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/mutex.h"
#include "base/result.h"
#include "cache/activity_mark.h"
#include "cache/cached_file.h"
#include "cache/config.h"
#include "cache/entry.h"
#include "cache/origin.h"
#include "cache/stats.h"
#include "cache/writer.h"
#include "fetch/channel_pool.h"
#include "fetch/planner.h"
#include "io/byte_source.h"

namespace ferry::readahead {
class Prefetcher;
}  // namespace ferry::readahead

namespace ferry::cache {

class AccessConfirmations;
class CachedFile;

// How a handle is opened (the client plug-in sets them from its settings).
struct OpenOptions {
  // TTree-aware read-ahead for the handle (file_ahead.h), when Config::readahead is on.
  bool read_ahead = false;
  // With read_ahead: also sequential read-ahead for plain reads that follow each other (a copy
  // through the site proxy; FileAheadOptions::sequential).
  bool sequential_ahead = false;
  // With read_ahead: the branch memory's scope (FileAheadOptions::memory_scope; the site
  // proxy: the client's host). Empty: one memory for the process.
  std::string ahead_scope;
  // The process is a copy tool (bulk_detect.h IsCopyTool): with Config::bypass on, the handle
  // reads through without caching (bypassed_bytes) and the cache is not touched.
  bool bulk_reader = false;
  // Watch the handle's reads for a copy's pattern (bulk_detect.h BulkDetector), with
  // Config::bypass on. Off in the site proxy, whose handles serve remote clients.
  bool detect_bulk = false;
  // Track which pages this process verified (verified_pages.h), so that the handle's
  // CachedFile::ZeroCopyFd can answer: the site proxy, which sends verified pages with sendfile,
  // and reads them back without checking them again (the same rule) when it copies them.
  bool zero_copy = false;
  // Read through without touching the cache's directory (the site proxy while none of its
  // disks is in service): a pass-through handle, counted as nothing but origin traffic.
  bool uncached = false;
};

class Cache : public std::enable_shared_from_this<Cache> {
 public:
  // The process-wide Cache of config.dir (created on first use; later calls get the same object
  // and their config is ignored). Prepares the directory.
  static Result<std::shared_ptr<Cache>> Get(const Config& config);
  // A private Cache (tests: several "processes" in one).
  static Result<std::shared_ptr<Cache>> Create(const Config& config);

  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;
  ~Cache();

  // Opens `url` through the cache. Errors are the origin's (Stat failed); cache faults and
  // declined admissions give a pass-through CachedFile instead.
  Result<std::unique_ptr<CachedFile>> Open(const std::string& url,
                                           std::shared_ptr<Origin> origin,
                                           const OpenOptions& options = {});
  // True when this cache holds entry `key` (url.h EntryKey): this process has it open or queued
  // for writing, or its index file exists. A cheap look (a stat), not a validation.
  bool Holds(const std::string& key);
  // False while the last capacity check found the directory over a limit (new files are then
  // read through uncached): the site proxy places new entries elsewhere.
  bool accepting() const { return !over_now_.load(std::memory_order_relaxed); }
  // Drops the cached copy of `url` (a writer opened it): its files are removed and handles of
  // this process that read it pass through from now on.
  Status Invalidate(const std::string& url);

  const Config& config() const { return config_; }
  Counters& counters() { return counters_; }
  // A read went through the cache now (replica/activity.h: a background replica build waits).
  void NoteActivity() { activity_.Touch(Now()); }
  // An application read of `entry` now: NoteActivity, and, with replica = auto, the check (at
  // most every kMovedPastCheckNs) whether the reader moved past another entry it has open:
  // that entry's reads stopped kMovedPastQuietNs ago while this one, first read after it, is
  // read, and bytes it read are not in its replica yet. Its replica is then asked for now
  // (published first, as at a last close), not when the application closes it: an analysis that
  // opens its files at the start and closes them at the end gets each file's replica while it reads
  // the next ones. The handles keep their layout; reads of the file after that extend the byte tier
  // and the trace, and the next moved-past or last close builds the replica again.
  void NoteRead(Entry& entry);
  static constexpr int64_t kMovedPastQuietNs = 250'000'000;
  static constexpr int64_t kMovedPastCheckNs = 50'000'000;
  // A read had to fetch from the origin (replica/activity.h: a build may go on beside a filling
  // pass).
  void NoteFilling() { filling_.Touch(Now()); }
  const fetch::Planner& planner() const { return planner_; }
  WriteBehind& writer() { return *writer_; }
  // Read-ahead's fetch threads, meters and branch memory; null until a handle with read-ahead
  // opened.
  readahead::Prefetcher* prefetcher() const {
    return prefetcher_ptr_.load(std::memory_order_acquire);
  }

  // Merges this process's counters into DIR/stats (also done at every close).
  Status MergeStats();
  // Waits until queued writes are stored and published (tests, benchmarks).
  bool Flush(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Stops read-ahead (queued fetches dropped, running ones finished), stores and publishes what
  // is queued, stops the write-behind thread and merges the counters; later fills are not
  // cached. Idempotent; the destructor calls it. For hosts that exit without destroying the
  // Cache (the plug-in calls it from an exit handler).
  void Shutdown();

 private:
  explicit Cache(const Config& config);
  Result<std::unique_ptr<CachedFile>> PassThrough(std::shared_ptr<Origin> origin);
  // Group cache: the origin lets this user open entry `key` (asked at most once per
  // shared_reauth); otherwise the origin's error, counted, and no byte of the entry is served.
  Status ConfirmAccess(const std::string& key, Origin& origin);
  readahead::Prefetcher& EnsurePrefetcher();
  bool Admit();
  // Measures usage, evicts when over, and blocks or unblocks the write-behind queue.
  bool CheckCapacity(bool force);
  // The estimate since the last scan may pass a limit.
  bool MaybeOver() const FERRY_REQUIRES(capacity_mu_);
  // Measures usage and free space, evicts when a limit is passed: the limit still passed after
  // eviction (a config key), or nullptr when under them all.
  const char* MeasureAndEvict() FERRY_REQUIRES(capacity_mu_);
  int64_t Now() const;  // config_.clock_ns, else the steady clock
  void OnWritten(uint64_t bytes);
  // The last handle of `entry` closed, or the reader moved past it, and its pages are
  // published (write-behind thread).
  void OnIdle(const std::shared_ptr<Entry>& entry);
  // The verified-pages set of entry `key`'s incarnation `epoch`: kept across the entry's closes
  // (a warm pass opens every file anew), a new one when the epoch changed. At most
  // kMaxVerifiedSets are kept; beyond, the one unused longest is dropped.
  std::shared_ptr<VerifiedPages> VerifiedFor(const std::string& key,
                                             uint64_t epoch,
                                             uint64_t page_count) FERRY_EXCLUDES(verified_mu_);
  static constexpr size_t kMaxVerifiedSets = 4096;
  // NoteRead's check: asks the replicas of the open entries the reader moved past.
  void AskReplicasMovedPast(const Entry& reading, int64_t now_ns) FERRY_EXCLUDES(open_mu_);

  const Config config_;
  Counters counters_;
  std::unique_ptr<AccessConfirmations> confirmations_;  // group caches only
  ActivityMark activity_{config_.dir};
  ActivityMark filling_{config_.dir, kFillingFile};
  fetch::Planner planner_;
  std::unique_ptr<WriteBehind> writer_;

  Mutex registry_mu_;
  std::map<std::string, std::weak_ptr<Entry>> registry_ FERRY_GUARDED_BY(registry_mu_);

  // The entries this process has open (replica = auto), for NoteRead's check; closed ones
  // are dropped at the check.
  Mutex open_mu_;
  std::vector<std::weak_ptr<Entry>> open_ FERRY_GUARDED_BY(open_mu_);
  std::atomic<int64_t> moved_past_checked_ns_{0};

  Mutex capacity_mu_;
  int64_t last_check_ns_ FERRY_GUARDED_BY(capacity_mu_) = 0;
  uint64_t last_usage_ FERRY_GUARDED_BY(capacity_mu_) = 0;
  uint64_t last_listed_ FERRY_GUARDED_BY(capacity_mu_) = 0;
  uint64_t last_free_inodes_ FERRY_GUARDED_BY(capacity_mu_) = 0;
  bool over_ FERRY_GUARDED_BY(capacity_mu_) = false;
  std::atomic<bool> over_now_{false};  // over_, for accepting()
  std::atomic<uint64_t> written_since_check_{0};
  std::atomic<uint64_t> admitted_since_check_{0};  // new entries
  std::atomic<int64_t> last_merge_ns_{0};

  Mutex verified_mu_;
  struct VerifiedSlot {
    std::shared_ptr<VerifiedPages> pages;
    uint64_t used = 0;  // verified_uses_ at the last VerifiedFor
  };
  std::map<std::string, VerifiedSlot> verified_ FERRY_GUARDED_BY(verified_mu_);
  uint64_t verified_uses_ FERRY_GUARDED_BY(verified_mu_) = 0;

  Mutex prefetcher_mu_;
  std::shared_ptr<readahead::Prefetcher> prefetcher_ FERRY_GUARDED_BY(prefetcher_mu_);
  std::atomic<readahead::Prefetcher*> prefetcher_ptr_{nullptr};
};

}  // namespace ferry::cache
