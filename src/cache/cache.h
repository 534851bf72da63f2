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
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/mutex.h"
#include "base/result.h"
#include "cache/activity.h"
#include "cache/config.h"
#include "cache/entry.h"
#include "cache/origin.h"
#include "cache/replica_view.h"
#include "cache/stats.h"
#include "cache/writer.h"
#include "fetch/channel_pool.h"
#include "fetch/planner.h"
#include "io/byte_source.h"

namespace ferry::cache {

class AccessConfirmations;
class BulkDetector;
class CachedFile;
class FileAhead;
class LinkMeter;
class Prefetcher;

// How a handle is opened (the client plug-in sets them from its settings).
struct OpenOptions {
  // TTree-aware read-ahead for the handle (file_ahead.h), when Config::readahead is on.
  bool read_ahead = false;
  // The process is a copy tool (bulk_detect.h IsCopyTool): with Config::bypass on, the handle
  // reads through without caching (bypassed_bytes) and the cache is not touched.
  bool bulk_reader = false;
  // Watch the handle's reads for a copy's pattern (bulk_detect.h BulkDetector), with
  // Config::bypass on. Off in the site proxy, whose handles serve remote clients.
  bool detect_bulk = false;
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
  // Drops the cached copy of `url` (a writer opened it): its files are removed and handles of
  // this process that read it pass through from now on.
  Status Invalidate(const std::string& url);

  const Config& config() const { return config_; }
  Counters& counters() { return counters_; }
  // A read went through the cache now (activity.h: a background replica build waits).
  void NoteActivity() { activity_.Touch(Now()); }
  const fetch::Planner& planner() const { return planner_; }
  WriteBehind& writer() { return *writer_; }
  // Read-ahead's fetch threads, meters and branch memory; null until a handle with read-ahead
  // opened.
  Prefetcher* prefetcher() const { return prefetcher_ptr_.load(std::memory_order_acquire); }

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
  Prefetcher& EnsurePrefetcher();
  bool Admit();
  // Measures usage, evicts when over, and blocks or unblocks the write-behind queue.
  bool CheckCapacity(bool force);
  int64_t Now() const;  // config_.clock_ns, else the steady clock
  void OnWritten(uint64_t bytes);
  // The last handle of `entry` closed and its pages are published (write-behind thread).
  void OnIdle(const std::shared_ptr<Entry>& entry);

  const Config config_;
  Counters counters_;
  std::unique_ptr<AccessConfirmations> confirmations_;  // group caches only
  ActivityMark activity_{config_.dir};
  fetch::Planner planner_;
  std::unique_ptr<WriteBehind> writer_;

  Mutex registry_mu_;
  std::map<std::string, std::weak_ptr<Entry>> registry_ FERRY_GUARDED_BY(registry_mu_);

  Mutex capacity_mu_;
  int64_t last_check_ns_ FERRY_GUARDED_BY(capacity_mu_) = 0;
  uint64_t last_usage_ FERRY_GUARDED_BY(capacity_mu_) = 0;
  bool over_ FERRY_GUARDED_BY(capacity_mu_) = false;
  std::atomic<uint64_t> written_since_check_{0};
  std::atomic<int64_t> last_merge_ns_{0};

  Mutex prefetcher_mu_;
  std::unique_ptr<Prefetcher> prefetcher_ FERRY_GUARDED_BY(prefetcher_mu_);
  std::atomic<Prefetcher*> prefetcher_ptr_{nullptr};
};

// What one handle cost, for per-file access records (the proxy writes one at close).
struct HandleCounters {
  std::atomic<uint64_t> bytes_from_cache{0};   // bytes served from the cache
  std::atomic<uint64_t> bytes_from_origin{0};  // bytes this handle fetched (gaps included)
  std::atomic<uint64_t> origin_requests{0};    // vector reads / reads this handle sent
};

class CachedFile {
 public:
  CachedFile(const CachedFile&) = delete;
  CachedFile& operator=(const CachedFile&) = delete;
  ~CachedFile();

  // Size of the file this handle serves: the virtual file's when it opened a replica.
  uint64_t size() const { return size_; }
  // Size of the remote file.
  uint64_t origin_size() const { return origin_size_; }
  // Modification time of the remote file (seconds since the epoch).
  int64_t mtime() const { return mtime_; }
  // True when reads go straight to the origin (no entry, or the entry failed). A handle with a
  // replica still serves the virtual file then (its original region from the origin).
  bool pass_through() const { return !entry_ || entry_->failed(); }
  // True when the handle serves a replica's virtual file (docs/format/replica.md); it keeps
  // that layout until it closes. Its bytes past origin_size() exist only in the cache, so a
  // caller must never send such a handle's reads to the origin itself.
  bool virtual_file() const { return replica_ != nullptr; }
  uint64_t replica_generation() const;
  const HandleCounters& handle_counters() const { return handle_; }

  // Reads every request (each must lie inside [0, size()); otherwise kInvalidArgument, nothing
  // read). Each request gets its own status; returns the first failure.
  Status ReadV(std::span<io::ReadRequest> requests);
  Status Read(uint64_t offset, std::span<uint8_t> dest);
  // True when every byte of the requests is held (index only, no I/O): the caller can expect
  // ReadV to complete without the origin.
  bool AllHeld(std::span<const io::ReadRequest> requests);
  // For a kXR_pgread answer, after ReadV filled `data` with [offset, offset + data.size()): the
  // CRC32C of each 4 KiB segment, segments aligned to file offsets (out.size() must be their
  // count). A segment that is a whole page the cache holds full gets the page's stored CRC
  // (ReadV verified the bytes against it, so nothing is computed twice); other segments are
  // computed from `data`. Returns how many stored CRCs were used. segment_crcs.cc.
  size_t SegmentCrcs(uint64_t offset, std::span<const uint8_t> data, std::span<uint32_t> out);

  // Ends the handle: read-ahead stops (its running fetches are waited for), the entry's index is
  // published soon (write-behind) and counters merged. Must not run concurrently with reads of
  // the same handle; later reads pass through.
  void Close();

  // ---- for read-ahead (file_ahead.h; cached_ahead.cc) ----
  // Reads like ReadV, for the cache's own purposes: not seen by read-ahead, not recorded in the
  // access trace, and its misses do not hold read-ahead back.
  Status ReadUntracked(std::span<io::ReadRequest> requests);
  // Fetches the bytes of `ranges` that the cache neither holds nor has in flight (in the
  // original region: a replica's overlay is held) into the page store, over the handle's
  // channels; the application's identical misses join it meanwhile. `fetched` receives the
  // chunks it fetched (sorted). Counts prefetch_bytes. Never fails: what is not fetched is
  // read by the application as usual.
  void Prefetch(std::span<const fetch::Range> ranges, std::vector<fetch::Range>& fetched);
  // The handle's read-ahead, or null (tests).
  const FileAhead* read_ahead() const { return ahead_.get(); }
  // The handle reads as a copy does (bulk_detect.h): its reads pass through uncached.
  bool bypassing() const { return bypass_.load(std::memory_order_relaxed); }

 private:
  friend class Cache;
  CachedFile(std::shared_ptr<Cache> cache,
             std::shared_ptr<Entry> entry,
             std::shared_ptr<Origin> origin,
             uint64_t size,
             int64_t mtime,
             std::shared_ptr<const ReplicaView> replica = nullptr);

  // The original file's bytes (byte tier, then origin); `missed` is set when the origin was
  // needed. Requests must lie inside [0, origin_size()).
  Status ReadOriginal(std::span<io::ReadRequest> requests, bool* missed);
  // The virtual file (replica_read.cc): original region with patches, then the overlay.
  Status ReadVirtual(std::span<io::ReadRequest> requests, bool* missed);
  // True in a thread doing ReadUntracked.
  static bool UntrackedRead();
  // Parts of the overlay (offsets >= origin_size()); statuses per part.
  void ReadOverlay(std::span<io::ReadRequest> parts);
  // Reads the extents [first, last] of the replica into the parts that lie in them.
  void ReadExtentRun(std::span<io::ReadRequest> parts,
                     std::span<const size_t> order,
                     size_t begin,
                     size_t end,
                     long first,
                     long last);
  // Rebuilds extent `e` from the original basket into `out` (a replica fault's fallback).
  Status RebuildExtent(long e, ByteVector& out);
  Status ReadDirect(std::span<io::ReadRequest> requests);
  // ReadDirect for a bulk reader, counted as bypassed_bytes.
  Status ReadBypassed(std::span<io::ReadRequest> requests);
  Status FetchMissing(std::span<io::ReadRequest> requests, std::vector<Piece> todo);
  void ServeAgain(std::span<io::ReadRequest> requests, std::vector<Piece>& todo);
  // Reads pieces (grouped into vector reads) from the origin with retries; sets their statuses.
  // `ahead`: read-ahead's fetch, kept off channel 0 while another channel is ready.
  void ReadPieces(std::span<io::ReadRequest> pieces,
                  std::span<const fetch::VectorRead> groups,
                  bool ahead = false);
  void ReadPiecesDirect(std::span<io::ReadRequest> requests, std::span<const Piece> pieces);

  std::shared_ptr<Cache> cache_;
  std::shared_ptr<Entry> entry_;
  std::shared_ptr<Origin> origin_;
  uint64_t size_;
  uint64_t origin_size_;
  int64_t mtime_;
  std::shared_ptr<const ReplicaView> replica_;
  fetch::ChannelPool channels_;
  std::atomic<bool> closed_{false};
  HandleCounters handle_;
  // Read-ahead (set by Cache::Open for OpenOptions::read_ahead): the handle's predictor and
  // window, and the meter of its origin's link (origin requests are timed when set).
  std::shared_ptr<FileAhead> ahead_;
  LinkMeter* meter_ = nullptr;
  // Bypass of bulk readers (Config::bypass): the pattern detector, and whether it fired (or
  // the process is a copy tool).
  std::unique_ptr<BulkDetector> bulk_;
  std::atomic<bool> bypass_{false};
};

}  // namespace ferry::cache
