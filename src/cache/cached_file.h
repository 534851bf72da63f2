// CachedFile: one remote file opened through the cache (Cache::Open, cache.h). Reads are served
// from the page store or a replica and what misses is fetched from the origin; see cache.h for
// the read path, fail-open and lifetimes. Implemented in cached_file.cc (the read path) and
// cached_ahead.cc (read-ahead's reads and fetches); a replica's virtual file is read by the
// replica tier (replica_hooks.h, replica/replica_read.cc) over this handle's ReadOriginal.
//
// Thread-safety: one CachedFile may be read from many threads at once; Close must not run
// concurrently with reads of the same handle.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/result.h"
#include "cache/entry.h"
#include "cache/origin.h"
#include "cache/replica_hooks.h"
#include "fetch/channel_pool.h"
#include "fetch/planner.h"
#include "io/byte_source.h"
#include "readahead/ahead_target.h"

namespace ferry::readahead {
class BulkDetector;
class FileAhead;
class LinkMeter;
}  // namespace ferry::readahead

namespace ferry::cache {

class Cache;

// What one handle cost, for per-file access records (the proxy writes one at close).
struct HandleCounters {
  std::atomic<uint64_t> bytes_from_cache{0};   // bytes served from the cache to the reader
  std::atomic<uint64_t> bytes_from_origin{0};  // bytes this handle fetched (gaps included)
  std::atomic<uint64_t> origin_requests{0};    // vector reads / reads this handle sent
  // Of those, what read-ahead fetched (Prefetch: predictions, metadata, sequential windows).
  std::atomic<uint64_t> prefetch_bytes{0};
  std::atomic<uint64_t> prefetch_requests{0};
};

class CachedFile final : public readahead::AheadTarget, private OriginalReader {
 public:
  CachedFile(const CachedFile&) = delete;
  CachedFile& operator=(const CachedFile&) = delete;
  ~CachedFile() override;

  // Size of the file this handle serves: the virtual file's when it opened a replica.
  uint64_t size() const override { return size_; }
  // Size of the remote file.
  uint64_t origin_size() const override { return origin_size_; }
  // Modification time of the remote file (seconds since the epoch).
  int64_t mtime() const { return mtime_; }
  // True when reads go straight to the origin (no entry, or the entry failed). A handle with a
  // replica still serves the virtual file then (its original region from the origin).
  bool pass_through() const { return !entry_ || entry_->failed(); }
  // True when the handle serves a replica's virtual file (docs/format/replica.md); it keeps
  // that layout until it closes. Its bytes past origin_size() exist only in the cache, so a
  // caller must never send such a handle's reads to the origin itself.
  bool virtual_file() const override { return replica_ != nullptr; }
  uint64_t replica_generation() const;
  const HandleCounters& handle_counters() const { return handle_; }

  // Reads every request (each must lie inside [0, size()); otherwise kInvalidArgument, nothing
  // read). Each request gets its own status; returns the first failure.
  Status ReadV(std::span<io::ReadRequest> requests);
  Status Read(uint64_t offset, std::span<uint8_t> dest);
  // True when every byte of the requests is held (index only, no I/O): the caller can expect
  // ReadV to complete without the origin.
  bool AllHeld(std::span<const io::ReadRequest> requests) override;
  // Zero-copy serving (the site proxy's sendfile; needs OpenOptions::zero_copy): the descriptor
  // of the entry's data file when every byte of [offset, offset + length) is held there, at the
  // same offsets, and was verified by this process since it last changed
  // (Entry::VerifiedDataFd); -1 otherwise, and the caller takes the normal read path. Index
  // only, no I/O. The descriptor is valid until the handle closes.
  int ZeroCopyFd(uint64_t offset, uint64_t length);
  // The bytes of the file the handle's entry holds (index only); 0 when it passes through.
  uint64_t held_bytes();
  // Counts bytes the caller sent from ZeroCopyFd's descriptor as a hit.
  void CountZeroCopy(uint64_t bytes);
  // Read-ahead follows bytes the caller sent from ZeroCopyFd's descriptor as it follows a read
  // that hit (FileAhead::Served): a reader served that way is still read ahead of when it
  // reaches what the file does not hold. (Not recorded in the access trace: a handle's trace
  // starts with a miss, and a sendfile never misses.)
  void FollowZeroCopy(uint64_t offset, uint64_t length);
  // Page size of the handle's entry; 0 when the handle passes through (nothing stored).
  uint32_t page_size() const;
  // The CRC32C the cache stored for each of the pages first_page, first_page + 1, ... that it
  // holds full (out[i] for page first_page + i; nullopt for the others). Index only, no I/O.
  // A hit was verified against these CRCs, so a caller that must checksum what it read (the
  // site proxy's pgread answers, plugin/proxy/segment_crcs.h) need not compute them again.
  // An encrypted entry keeps no CRCs: all nullopt.
  void StoredPageCrcs(uint64_t first_page, std::span<std::optional<uint32_t>> out) const;

  // Ends the handle: read-ahead stops (its running fetches are waited for), the entry's index is
  // published soon (write-behind) and counters merged. Must not run concurrently with reads of
  // the same handle; later reads pass through.
  void Close();

  // ---- for read-ahead (file_ahead.h; cached_ahead.cc) ----
  // Reads like ReadV, for the cache's own purposes: not seen by read-ahead, not recorded in the
  // access trace, and its misses do not hold read-ahead back.
  Status ReadUntracked(std::span<io::ReadRequest> requests) override;
  // Fetches the bytes of `ranges` that the cache neither holds nor has in flight (in the
  // original region: a replica's overlay is held) into the page store, over the handle's
  // channels; the application's identical misses join it meanwhile. `fetched` receives the
  // chunks it fetched (sorted). Counts prefetch_bytes. Never fails: what is not fetched is
  // read by the application as usual.
  void Prefetch(std::span<const fetch::Range> ranges, std::vector<fetch::Range>& fetched) override;
  // Read-ahead's accounting, into the cache's counters (prefetch_hits, prefetch_unused_bytes).
  void CountAhead(uint64_t hits, uint64_t unused_bytes) override;
  // The handle's read-ahead, or null (tests).
  const readahead::FileAhead* read_ahead() const { return ahead_.get(); }
  readahead::FileAhead* read_ahead() { return ahead_.get(); }
  // Starts read-ahead before the application's first read (FileAhead::WarmUp): for a file
  // opened ahead of its reader. Nothing without read-ahead.
  void WarmUp();
  // The handle reads as a copy does (bulk_detect.h): its reads pass through uncached.
  bool bypassing() const { return bypass_.load(std::memory_order_relaxed); }

 private:
  friend class Cache;
  CachedFile(std::shared_ptr<Cache> cache,
             std::shared_ptr<Entry> entry,
             std::shared_ptr<Origin> origin,
             uint64_t size,
             int64_t mtime,
             std::shared_ptr<const VirtualFile> replica = nullptr);

  // The original file's bytes (byte tier, then origin); `missed` is set when the origin was
  // needed. Requests must lie inside [0, origin_size()).
  Status ReadOriginal(std::span<io::ReadRequest> requests, bool* missed) override;
  // The virtual file (read by the replica tier over ReadOriginal), and its access trace.
  Status ReadVirtual(std::span<io::ReadRequest> requests, bool* missed);
  // True in a thread doing ReadUntracked.
  static bool UntrackedRead();
  // Whether an application read goes into the access trace: a miss (`missed`) does, and once
  // one of the handle's reads missed (or the entry had no trace yet: Entry::has_trace), so
  // does every read of bytes the handle had not read since, hits included. What a miss fetches is
  // the page store's business (the bytes between a page's valid interval and the read: small units
  // of other columns beside it), so a pass that fills the cache reads many units as hits; left out
  // of the trace, they would never be relocated (an RNTuple of small pages, whose metadata reads
  // fetched its pages, got no replica at all). Reading again what the handle read (a warm pass) is
  // not traced again, and allocates nothing.
  bool Traced(std::span<const io::ReadRequest> requests, bool missed);
  Status ReadDirect(std::span<io::ReadRequest> requests);
  // ReadDirect for a bulk reader, counted as bypassed_bytes.
  Status ReadBypassed(std::span<io::ReadRequest> requests);
  Status FetchMissing(std::span<io::ReadRequest> requests, std::vector<Piece> todo);
  // FetchMissing's steps: the fetch this call starts (planned and claimed in one step, null
  // when every missing byte is held or already coming) and the in-flight fetches it joins.
  struct MissFetches {
    std::shared_ptr<Fetch> mine;
    fetch::FetchPlan plan;
    std::vector<std::pair<fetch::Range, std::shared_ptr<Fetch>>> joined;
  };
  MissFetches PlanMissFetches(std::span<const Piece> todo);
  void RunOwnFetch(Fetch& mine, const fetch::FetchPlan& plan);
  // The end of a fetch this handle claimed (its own miss's or read-ahead's), statuses set:
  // FinishFetch wakes its joiners, out of the in-flight registry first when it brought nothing
  // (a joiner that goes round the miss path again must not find it and join it once more);
  // StoreOrRelease hands it to the write-behind, or releases it when it has nothing to store,
  // the entry failed or the writer refused it (a later miss fetches those bytes again).
  void FinishFetch(Fetch& fetch);
  void StoreOrRelease(const std::shared_ptr<Fetch>& fetch);
  void DeliverPiece(io::ReadRequest& req,
                    const Piece& p,
                    const MissFetches& fetches,
                    std::vector<Piece>& left);
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
  std::shared_ptr<const VirtualFile> replica_;
  fetch::ChannelPool channels_;
  std::atomic<bool> closed_{false};
  // Traced(): whether a read missed, and the byte ranges read since (start -> end).
  std::atomic<bool> traced_{false};
  Mutex read_mu_;
  std::map<uint64_t, uint64_t> read_ FERRY_GUARDED_BY(read_mu_);
  HandleCounters handle_;
  // Read-ahead (set by Cache::Open for OpenOptions::read_ahead): the handle's predictor and
  // window, and the meter of its origin's link (origin requests are timed when set).
  std::shared_ptr<readahead::FileAhead> ahead_;
  readahead::LinkMeter* meter_ = nullptr;
  // Bypass of bulk readers (Config::bypass): the pattern detector, and whether it fired (or
  // the process is a copy tool).
  std::unique_ptr<readahead::BulkDetector> bulk_;
  std::atomic<bool> bypass_{false};
  // FollowZeroCopy found the file held whole (it stays so while the handle serves sendfile).
  std::atomic<bool> whole_{false};
  // OpenOptions::zero_copy: the entry tracks the pages this process verified, and hits on them
  // are read back unchecked.
  bool zero_copy_ = false;
};

}  // namespace ferry::cache
