// Entry: the in-process state of one cache entry (one remote file), shared by every handle of
// the process that reads that file and by the write-behind thread.
//
// It owns the entry's descriptors (data file, fragment log, lock file), the in-memory PageIndex
// behind a shared mutex, and the registry of origin fetches in flight (so identical misses from
// several threads join one fetch). On disk it follows docs/format/page-store.md.
//
// Read side (any thread, no file locks): Serve() copies held bytes and reports what is missing;
// CRC mismatches are reported, never served. Write side (the write-behind thread): Store() puts
// fetched bytes into pages and fragments, Publish() writes the index atomically; both under the
// entry's write lock (in-process mutex + OFD byte lock).
//
// Faults: any unexpected I/O error on the entry's files, a lock timeout, or finding the entry
// recreated by another process marks the entry failed(); handles then read from the origin.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/fd.h"
#include "base/mutex.h"
#include "base/result.h"
#include "cache/config.h"
#include "cache/entry_store.h"
#include "cache/lock_file.h"
#include "cache/origin.h"
#include "cache/page_index.h"
#include "cache/page_seal.h"
#include "cache/stats.h"
#include "cache/verified_pages.h"
#include "fetch/range.h"

namespace ferry::cache {

class VirtualFile;

// One origin fetch: normalised chunks and one buffer for all of them. Created by the thread that
// misses; shared with joiners and with the write-behind queue. Chunk data and ok flags are
// written before Finish() and only read after Wait().
class Fetch {
 public:
  explicit Fetch(std::span<const fetch::Range> chunks);

  const std::vector<fetch::Range>& chunks() const { return chunks_; }
  std::span<uint8_t> ChunkBuffer(size_t i);
  std::span<const uint8_t> ChunkData(size_t i) const;
  // Records a chunk's outcome (before Finish()).
  void SetStatus(size_t i, const Status& st);
  bool ok(size_t i) const { return ok_[i] != 0; }
  // The error of a failed chunk, nullptr when it succeeded.
  const Error* error(size_t i) const { return errors_[i] ? &*errors_[i] : nullptr; }
  uint64_t bytes() const { return size_; }
  uint64_t ok_bytes() const;

  void Finish() FERRY_EXCLUDES(mu_);
  void Wait() const FERRY_EXCLUDES(mu_);
  // Index of the chunk holding byte `offset`, or -1.
  long ChunkAt(uint64_t offset) const;
  // Copies from the chunk holding `offset` as many bytes as it has (up to dest.size()) when that
  // chunk succeeded; returns the bytes copied (0 when no successful chunk holds `offset`).
  size_t CopyPrefix(uint64_t offset, std::span<uint8_t> dest) const;

 private:
  std::vector<fetch::Range> chunks_;
  std::vector<uint64_t> pos_;
  std::unique_ptr<uint8_t[]> buffer_;  // not zero-filled: every byte is read into
  uint64_t size_ = 0;
  std::vector<uint8_t> ok_;
  std::vector<std::optional<Error>> errors_;
  mutable Mutex mu_;
  mutable CondVar cv_;
  bool done_ FERRY_GUARDED_BY(mu_) = false;
};

// Missing bytes of one request of a ReadV.
struct Piece {
  size_t request = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Scratch of one reading thread (thread_local in the read path).
struct ServeScratch {
  std::vector<uint8_t> page;  // one page or fragment
  std::vector<uint64_t> bad;  // pages whose CRC failed
};

class Entry {
 public:
  Entry(const Config& config, Counters& counters, std::string key, std::string url);
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  ~Entry();

  enum class OpenState { kReady, kDeclined, kCollision };
  // Opens or creates the entry on disk (only the first caller does the work; later callers get
  // the same answer). `admit` is asked before a new entry is created. An error is either the
  // origin's (Stat() failed: origin_failed() is true) or a cache fault.
  Result<OpenState> Open(Origin& origin, const std::function<bool()>& admit);
  bool origin_failed() const { return origin_failed_; }

  const std::string& key() const { return key_; }
  const std::string& url() const { return url_; }
  const EntryPaths& paths() const { return paths_; }
  uint64_t size() const { return size_; }
  int64_t mtime() const { return mtime_; }
  uint32_t page_size() const { return page_size_; }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // The entry's sealer when it is encrypted (set at open, before any reader), else null.
  const PageSealer* sealer() const { return sealer_.get(); }
  // Marks the entry failed (counted once) and logs why at info level (FERRY_LOG=info).
  void Fail(const Error& why);

  // ---- read side ----
  SharedMutex& mu() FERRY_RETURN_CAPABILITY(mu_) { return mu_; }
  const PageIndex& index() const FERRY_REQUIRES_SHARED(mu_) { return index_; }
  // Copies the held part of [offset, offset + dest.size()) into dest (caller holds mu() shared)
  // and appends what is missing to `missing`. Returns bytes served; an error is a cache fault.
  Result<uint64_t> Serve(size_t request,
                         uint64_t offset,
                         std::span<uint8_t> dest,
                         ServeScratch& scratch,
                         std::vector<Piece>& missing) FERRY_REQUIRES_SHARED(mu_);
  // Zero-copy serving (verified_pages.h): the data file's descriptor when every byte of
  // [offset, offset + length) is in the data file at its own offset (full pages, and fragments
  // kept there at the edges) and every page it touches was verified by this process since it
  // last changed; -1 otherwise (encrypted entries always). Index only, no I/O. The descriptor
  // stays open while the entry lives.
  int VerifiedDataFd(uint64_t offset, uint64_t length) FERRY_EXCLUDES(mu_);
  // Attaches the process's verified-pages set of this incarnation, asked of `get` (epoch, page
  // count) once; reads mark pages in it from then on. Nothing for an encrypted entry.
  void AttachVerified(const std::function<std::shared_ptr<VerifiedPages>(uint64_t, uint64_t)>& get)
      FERRY_EXCLUDES(mu_);
  // Forgets pages whose CRC failed (takes mu() exclusive).
  void DropPages(std::span<const uint64_t> pages) FERRY_EXCLUDES(mu_);
  // Reloads the index when another process published since we last looked (rate-limited to
  // once per 20 ms unless forced). Returns true when pages were added.
  bool RefreshIfChanged(bool force = false);

  // ---- in-flight registry ----
  // Splits `need` (normalised) into what is already being fetched (`joined`, with the fetches)
  // and the rest (`own`); registers `own` as `fetch` in flight when non-empty. Of `coming`
  // (normalised: bytes the caller saw in flight when it planned) only what is still in flight is
  // joined, never claimed: the rest has landed since (the writer stores a fetch before it
  // releases it), and the caller serves it from the index.
  void ClaimInflight(std::span<const fetch::Range> need,
                     std::span<const fetch::Range> coming,
                     std::vector<fetch::Range>& own,
                     std::vector<std::pair<fetch::Range, std::shared_ptr<Fetch>>>& joined,
                     const std::function<std::shared_ptr<Fetch>()>& make_fetch);
  void ReleaseInflight(const Fetch* fetch);
  // The byte ranges currently in flight (sorted, disjoint).
  void InflightRanges(std::vector<fetch::Range>& out);
  // Held by a reader from InflightRanges through planning to ClaimInflight, so that fetches are
  // planned one after the other against each other's ranges (cached_file.cc).
  Mutex& plan_mu() FERRY_RETURN_CAPABILITY(plan_mu_) { return plan_mu_; }

  // ---- write side (write-behind thread) ----
  // Takes the write lock (in-process mutex, then the OFD byte lock shared with other
  // processes) and returns true; false, holding nothing, with the reason in `why` (kTimeout when
  // another process keeps it busy).
  bool TryLockForWrite(Status& why) FERRY_TRY_ACQUIRE(true, write_mu_);
  void UnlockForWrite() FERRY_RELEASE(write_mu_);
  // Stores the successful chunks of a fetch.
  Status Store(const Fetch& fetch, std::vector<uint8_t>& scratch) FERRY_REQUIRES(write_mu_);
  // Publishes the index when dirty and `force` or publish_ms elapsed.
  Status MaybePublish(bool force, std::vector<uint8_t>& scratch) FERRY_REQUIRES(write_mu_);
  bool dirty() const { return dirty_.load(std::memory_order_relaxed); }

  // ---- replica tier (docs/format/replica.md) ----
  // The entry's published replica, or null (none, replica = off, stale, or it failed to load,
  // which is counted as a replica fault). One stat of KEY.rpm per call; loaded, by the replica
  // tier (Config::replica_hooks), when it changed.
  std::shared_ptr<const VirtualFile> CurrentReplica();

  // ---- access trace (docs/format/replica.md) ----
  // Records one application read of a pass that fills the cache (a miss, and later reads of
  // bytes the same handle had not read: CachedFile::Traced), as read by a handle whose layout
  // has replica generation `generation` (0: the original file); the record's bytes are the
  // replica tier's (ReplicaHooks::EncodeAccess), none without one. Bounded: beyond 1 MiB
  // pending, or once the trace file is full, records are dropped.
  void RecordAccess(uint64_t generation, std::span<const io::ReadRequest> requests);
  bool trace_pending() const { return trace_pending_.load(std::memory_order_relaxed); }
  // Whether the entry has an access trace: KEY.acc was not empty at open (or the entry had a
  // replica, whose complete build empties it), or a read was recorded since. A handle of an entry
  // without one records its reads from the first, hit or miss (CachedFile::Traced): a pass whose
  // reads all hit bytes read-ahead brought first would otherwise leave no trace, and the replica no
  // layout.
  bool has_trace() const { return has_trace_.load(std::memory_order_relaxed); }
  // True since a read missed (new bytes may extend a replica); Take clears it.
  bool replica_wish() const { return replica_wish_.load(std::memory_order_relaxed); }
  bool TakeReplicaWish() { return replica_wish_.exchange(false, std::memory_order_relaxed); }
  // The reader moved past this entry (cache.h, Cache::NoteRead): an application read of it at
  // `now_ns` (the cache's clock), and the check, at a read of `reading`, whether this entry's
  // reads stopped `quiet_ns` ago with a replica wish, and `reading` was first read after it (an
  // analysis that opened every file at the start and reads the first one has not moved past the
  // others). True once per quiet spell; each early build doubles the quiet its next one needs
  // (a file read in bursts is rebuilt a few times at most). Not while a fetch of this entry is
  // in flight or not yet stored: a read waiting on it is no read that stopped, and the build
  // would find the units it brings missing (a partial replica, until the next pass).
  void NoteRead(int64_t now_ns);
  bool TakeMovedPast(const Entry& reading, int64_t now_ns, int64_t quiet_ns)
      FERRY_EXCLUDES(inflight_mu_);
  // True when the held first bytes are a ROOT file's magic ("root").
  bool LooksLikeRoot();
  // The same, or nullopt while the first bytes are not held.
  std::optional<bool> RootMagic();
  // Appends pending records to KEY.acc (write-behind thread, write lock held). Best effort: the
  // trace only guides the layout of a replica.
  void FlushTrace() FERRY_REQUIRES(write_mu_);

  // ---- maintenance (entry_maintain.cc) ----
  // Opens an existing entry without an origin (replica builder, tools): loads its index and
  // data files and takes the open lock shared. kNotFound when there is no index.
  Status OpenExisting();
  // Runs `fn` only when no other process has the entry open: the open lock is made exclusive
  // for its duration (without waiting; opens elsewhere wait for it). False when another
  // process has the entry open.
  bool WithSoleOpen(const std::function<void()>& fn);
  // Drops from the index the full pages and fragments lying wholly inside `ranges` (sorted,
  // disjoint), punches their blocks out of the data file and publishes; the fragment log is
  // compacted afterwards. Takes the write lock; the caller holds the entry open alone
  // (WithSoleOpen). Returns the bytes released.
  Result<uint64_t> ReleaseRanges(std::span<const fetch::Range> ranges) FERRY_EXCLUDES(write_mu_);
  // When the garbage — dead data-file pages plus superseded fragment-log bytes — passes
  // max(64 KiB, 3% of the bytes held), or `force`: releases the dead pages and rewrites the
  // fragment log (RewriteFragmentLog). Also removes index temp files left by processes killed
  // while publishing. Crash-safe: a published index only names bytes on disk. Write lock held,
  // entry open alone. Returns the bytes freed.
  Result<uint64_t> CompactFragments(bool force) FERRY_REQUIRES(write_mu_);
  // Copies the live fragments densely to the end of the fragment log, publishes, and punches
  // out everything before them; a fragment failing its CRC is dropped. Returns bytes freed.
  Result<uint64_t> RewriteFragmentLog() FERRY_REQUIRES(write_mu_);
  // The write-behind thread's check after a publish (write lock held): compacts when the
  // garbage passed the bound and no other process has the entry open.
  void MaybeCompact() FERRY_REQUIRES(write_mu_);
  // Punches out data-file pages the index does not hold full (written by a process that died
  // before publishing them). Write lock held, entry open alone. Returns the bytes freed.
  Result<uint64_t> ReleaseDeadPages() FERRY_REQUIRES(write_mu_);

  // Handle bookkeeping: the last close publishes (via the writer) and touches the lock file.
  void AddHandle() { handles_.fetch_add(1); }
  int RemoveHandle() { return handles_.fetch_sub(1) - 1; }
  int handles() const { return handles_.load(); }
  void TouchLastRead() const;

 private:
  Status OpenLocked(Origin& origin, const std::function<bool()>& admit, OpenState& state)
      FERRY_REQUIRES(open_mu_);
  Status LockOpenByte();
  Status Create(const OriginInfo& info, bool recreate) FERRY_EXCLUDES(write_mu_);
  Status CreateLocked(const OriginInfo& info, bool recreate) FERRY_REQUIRES(write_mu_);
  // Sets the fields an open reads from the index (epoch_, size_, the sealer of an encrypted
  // entry, ...) and the stamp it was loaded with. Fails when the index is encrypted and this
  // process has no master key or another one (CheckKey).
  Status AdoptIndex(PageIndex index, const IndexStamp& stamp) FERRY_EXCLUDES(mu_);
  // Whether this process's master key (or its lack) opens `index`: an error saying why not
  // (warned once per process). An unencrypted index with a master key is fine here: the
  // opener recreates it encrypted.
  Status CheckKey(const PageIndex& index) const;
  // The bytes to write for `plain` (bytes [lo, ...) of `page`): sealed into sealed_ for an
  // encrypted entry (its seal in `seal`), else `plain` itself (its CRC in `crc`).
  std::span<const uint8_t> SealForWrite(uint64_t page,
                                        uint32_t lo,
                                        std::span<const uint8_t> plain,
                                        uint32_t& crc,
                                        Seal& seal) FERRY_REQUIRES(write_mu_);
  Status OpenDataFiles();
  Status StorePiece(uint64_t offset, std::span<const uint8_t> bytes, std::vector<uint8_t>& scratch)
      FERRY_REQUIRES(write_mu_);
  // StorePiece's two cases. A run of whole pages from `page` the index lacks (bytes start at
  // `offset`): one write for all of them; returns where the run ended.
  Result<uint64_t> StoreFullRun(uint64_t page, uint64_t offset, std::span<const uint8_t> bytes)
      FERRY_REQUIRES(write_mu_);
  // Part of a page from `lo`, merged with the page's fragment `have` where they touch.
  Status StorePartOfPage(uint64_t page,
                         uint32_t lo,
                         std::span<const uint8_t> data,
                         const std::optional<Fragment>& have,
                         std::vector<uint8_t>& scratch) FERRY_REQUIRES(write_mu_);
  Status AppendFragment(uint64_t page, uint32_t lo, std::span<const uint8_t> bytes)
      FERRY_REQUIRES(write_mu_);
  // Reads fragment f of `page` (f.length() bytes) from where it lies: the data file at its own
  // offset (in_data) or the log.
  Status ReadFragment(uint64_t page, const Fragment& f, uint8_t* out) const;
  // A piece a page could not keep (disjoint from its fragment, not longer): held in memory
  // (at most kMaxOrphans) and stored again once that page changed, so that pieces of one page
  // arriving out of order (an application read and a prefetch ending in it) come together.
  void KeepOrphan(uint64_t page, uint32_t lo, std::span<const uint8_t> bytes)
      FERRY_REQUIRES(write_mu_);
  Status RetryOrphans(uint64_t page, std::vector<uint8_t>& scratch) FERRY_REQUIRES(write_mu_);
  void MergeFrom(const PageIndex& disk, std::vector<std::pair<uint64_t, Fragment>>& theirs)
      FERRY_REQUIRES(mu_);
  // Merges the published index into ours when it changed since we last looked: nullopt when it
  // did not, else whether pages were added. Fragments both sides grew go to `theirs`.
  std::optional<bool> MergePublished(bool under_write_lock,
                                     std::vector<std::pair<uint64_t, Fragment>>& theirs)
      FERRY_EXCLUDES(refresh_mu_, mu_);
  // MergePublished, then combining `theirs` into our fragments. Returns true when pages were
  // added.
  bool RefreshForWrite() FERRY_REQUIRES(write_mu_);
  bool HeldIntact(uint64_t page, const Fragment& f, std::span<const uint8_t> bytes) const;
  Result<uint64_t> ReleaseRangesLocked(std::span<const fetch::Range> ranges)
      FERRY_REQUIRES(write_mu_);

  const Config& config_;
  Counters& counters_;
  const std::string key_;
  const std::string url_;
  const EntryPaths paths_;

  Mutex open_mu_;
  bool open_done_ FERRY_GUARDED_BY(open_mu_) = false;
  bool origin_failed_ = false;  // written once under open_mu_, before Open() returns
  Status open_status_ FERRY_GUARDED_BY(open_mu_);
  OpenState open_state_ FERRY_GUARDED_BY(open_mu_) = OpenState::kReady;

  LockFile lock_;
  Fd data_fd_;
  Fd frag_fd_;
  uint64_t size_ = 0;
  int64_t mtime_ = 0;
  uint32_t page_size_ = 0;
  uint64_t epoch_ = 0;
  std::unique_ptr<const PageSealer> sealer_;

  SharedMutex mu_;
  PageIndex index_ FERRY_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};

  Mutex refresh_mu_;
  IndexStamp stamp_ FERRY_GUARDED_BY(refresh_mu_);
  bool reload_pending_ FERRY_GUARDED_BY(refresh_mu_) = false;
  std::atomic<int64_t> last_refresh_ns_{0};

  Mutex plan_mu_;
  Mutex inflight_mu_;
  std::vector<std::pair<fetch::Range, std::shared_ptr<Fetch>>> inflight_
      FERRY_GUARDED_BY(inflight_mu_);

  Mutex write_mu_;  // the in-process half of the write lock
  uint64_t frag_end_ FERRY_GUARDED_BY(write_mu_) = 0;
  // Sealed bytes on their way to disk (encrypted entries; up to a run of 256 pages).
  std::vector<uint8_t> sealed_ FERRY_GUARDED_BY(write_mu_);
  struct Orphan {
    uint64_t page = 0;
    uint32_t lo = 0;
    std::vector<uint8_t> bytes;
  };
  static constexpr size_t kMaxOrphans = 64;
  std::vector<Orphan> orphans_ FERRY_GUARDED_BY(write_mu_);
  std::atomic<bool> dirty_{false};
  int64_t last_publish_ns_ FERRY_GUARDED_BY(write_mu_) = 0;
  int64_t shared_writer_until_ns_ FERRY_GUARDED_BY(write_mu_) = 0;

  std::atomic<int> handles_{0};

  // frag_end_ at the last MaybeCompact.
  uint64_t compact_checked_end_ FERRY_GUARDED_BY(write_mu_) = 0;

  Mutex replica_mu_;
  IndexStamp replica_stamp_ FERRY_GUARDED_BY(replica_mu_);
  std::shared_ptr<const VirtualFile> replica_ FERRY_GUARDED_BY(replica_mu_);

  Mutex trace_mu_;
  // Encoded records not yet appended.
  std::vector<uint8_t> trace_buffer_ FERRY_GUARDED_BY(trace_mu_);
  bool trace_full_ FERRY_GUARDED_BY(trace_mu_) = false;
  std::atomic<bool> trace_pending_{false};
  std::atomic<bool> replica_wish_{false};
  std::atomic<bool> has_trace_{false};
  std::atomic<int64_t> first_read_ns_{INT64_MIN};  // INT64_MIN: not read by this process
  std::atomic<int64_t> last_read_ns_{INT64_MIN};
  std::atomic<int64_t> moved_past_read_ns_{INT64_MIN};  // last_read_ns_ at the last early build
  std::atomic<int> early_builds_{0};
};

}  // namespace ferry::cache
