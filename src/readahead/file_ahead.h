// FileAhead: TTree-aware read-ahead for one cached file (ahead_target.h: a CachedFile of the
// client plug-in).
//
// What it does, per handle:
// 1. Decides whether the file gets read-ahead: once the application read the file's first
//    bytes and missed (the header itself on a cold file, or a read past it), the file's trees
//    are loaded once through the cache on a Prefetcher thread (reads identical to the
//    application's metadata reads join them). Not a ROOT file, or no tree: off for good. A
//    pass that only hits (a warm cache) never loads anything.
// 2. Feeds every application read to the predictor (read_ahead.h) and keeps, per predicted
//    basket, whether it is queued, in flight, landed in the cache, used or stale.
// 3. Keeps `window` bytes of predictions queued, in flight or landed and unread, fetched in
//    groups of about one application read each (so the read the application makes next joins
//    a fetch that ends soon), over the handle's channels, into the page store (so they serve
//    later passes too). The window is 2 x the link's bandwidth-delay product (LinkMeter),
//    at least kMinWindowReads application reads, at most `max_window`, scaled by a confidence
//    level:
//    0 after a seek (off; what is queued is dropped); 2 (half) at a read that starts its tree
//    at entry 0, 3 (all) at one that used seeded predictions, 1 (one read's worth, on
//    probation) after two other reads in sequence; one up each read that used predictions;
//    one down (not below 1) each read that made predictions stale (a branch skipped or
//    dropped: the pattern changed).
// 4. Counts, through AheadTarget::CountAhead, prefetch hits (application reads of baskets
//    read-ahead fetched: landed, or joined in flight) and unused bytes (bytes it fetched that
//    were unread at close: stale or never reached); fetched bytes are counted by the target's
//    Prefetch.
// 5. Across files: the branches learned go to the Prefetcher's BranchMemory once the read that
//    taught them was served (its miss first on the link); a file loaded
//    before its first read is seeded with the branches last read in its trees (kLater tasks,
//    promoted to kNow when the application starts reading it). Once its seeds landed, such a
//    file keeps one window of its next clusters fetched, still as kLater tasks: an analysis
//    that opened its files up front and is busy decoding one of them (LZMA) leaves the link
//    idle, and the next files' clusters can come meanwhile. The Prefetcher runs kLater tasks
//    only in what the files being read leave (prefetcher.h).
// 6. Sequential read-ahead (FileAheadOptions::sequential, any file): plain reads that follow
//    each other through the file (a copy) fetch the next kSeqWindowMin..kSeqWindowMax bytes
//    in fetches of kSeqFetch (kNow tasks) once kSeqRunToStart such reads came; a read with
//    gaps between its chunks (a vector read of baskets) neither starts nor breaks a run.
//    Counted as fetched bytes only (no per-unit hits or unused bytes).
// A reader that reads ahead itself (3 or more of its reads at once) gets no TTree read-ahead:
// what is queued is dropped and the window stays 0 (sequential read-ahead is not affected: a
// copy through the site proxy has several reads in flight).
// Never at the application's cost: predictions the application reads before they were sent are
// dropped (it fetches them itself, once); a prediction in flight is joined by the application's
// read (the entry's in-flight registry), and Prefetch skips what the application already has in
// flight, so nothing is fetched twice; a host may have fetches wait while the application
// waits on a fetch of its own (Prefetcher; neither host does now).
//
// Layout: offsets are those the handle serves — for a replica's virtual file, the virtual
// file's tree records are loaded, so predictions in its overlay are held (skipped) and those
// in the original region (branches the replica lacks) are fetched like any miss.
// Lifetime: owned by a shared_ptr of the CachedFile; tasks keep it alive but touch the
// CachedFile only between Start of a task and its end, and Stop() (called by Close) waits for
// running tasks and makes later ones return at once.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "fetch/range.h"
#include "io/byte_source.h"
#include "readahead/ahead_target.h"
#include "readahead/link_meter.h"
#include "readahead/prefetcher.h"
#include "readahead/read_ahead.h"

namespace ferry::readahead {

// What a host of FileAhead sets beyond the defaults (the client plug-in sets none).
struct FileAheadOptions {
  // The branch memory's key is "<memory_scope>\n<tree>" (the tree alone when empty): a host
  // serving many clients (the site proxy: the client's host) keeps each one's branches apart.
  std::string memory_scope;
  // Sequential read-ahead (FileAhead, item 6).
  bool sequential = false;
  // The file's Prefetcher::ReadOrder: its seeds and next clusters before it is read (kLater
  // tasks) go out in that order among the files opened ahead.
  std::string read_order;
};

class FileAhead : public std::enable_shared_from_this<FileAhead> {
 public:
  // Levels of confidence: the window is target >> (kTopLevel - level) (1: one read); 0 is off.
  static constexpr uint32_t kTopLevel = 3;
  // The smallest fetch group (a reader asking for a few small baskets at a time would otherwise
  // cost one origin request per basket).
  static constexpr uint64_t kMinUnit = 256 << 10;
  // The trusted window holds at least this many application reads. The link meter's rate is
  // that of the requests read-ahead itself sends, and a TCP connection that is kept half idle
  // never opens its window: two reads ahead stayed at two (6 AGC files over 40 ms, 1 Gbit/s:
  // 2.91 s with 2, 2.75 s with 6, 2.76 s with 10). It also sizes the window a file opened
  // ahead keeps coming while the reader decodes another: a cold in-order pass (agc --reads 0
  // --opens 1) over 6 zlib-1 then 3 LZMA-9 files, 70 MB read through 40 ms, came within
  // 1.03-1.05x of its in-order limit with 12 against 1.08-1.14x with 6 (medians of three sets
  // of paired runs at load 3-5 on 2 cores; at load 6-12 the runs' scatter, 1.1-1.8x, hid any
  // difference), the same on 5 zlib-1 files (issue 38).
  static constexpr uint64_t kMinWindowReads = 12;
  // A cold file's metadata fetch (PrefetchMetadata): its head (header, top directory, an
  // RNTuple's header; at least kHeadBytes) and its tail, each as long as the last file loaded
  // showed (Prefetcher::metadata_head, metadata_tail) and at most 1/kMaxTailShare of the file.
  static constexpr uint64_t kHeadBytes = 4096;
  static constexpr uint64_t kMaxTailShare = 8;
  // Sequential read-ahead (item 6): after this many plain reads that follow each other, the
  // next window is fetched; the window doubles from kSeqWindowMin up to kSeqWindowMax, in
  // fetches of kSeqFetch. (An xrdcp of 200 MiB through a cold site proxy: 22 s without, 3.9 s
  // with it, 3.0 s direct.)
  static constexpr uint32_t kSeqRunToStart = 3;
  static constexpr uint64_t kSeqWindowMin = 4 << 20;
  static constexpr uint64_t kSeqWindowMax = 16 << 20;
  static constexpr uint64_t kSeqFetch = 2 << 20;

  FileAhead(AheadTarget& file,
            Prefetcher& prefetcher,
            LinkMeter& meter,
            uint64_t max_window,
            uint32_t max_chunks,
            bool root_name,
            FileAheadOptions options = {});
  FileAhead(const FileAhead&) = delete;
  FileAhead& operator=(const FileAhead&) = delete;
  ~FileAhead() = default;

  // An application read, before it is served. One atomic load while read-ahead is off.
  // Returns whether read-ahead follows the read (it covers baskets of a file whose trees were
  // loaded, which happens only after a miss: a filling pass). Such reads may be served by what
  // read-ahead fetched, so the caller records them in the access trace as it records misses.
  bool BeforeRead(std::span<const io::ReadRequest> requests);
  // ... after it was served; `missed`: some of it came from the origin.
  void AfterRead(std::span<const io::ReadRequest> requests, bool missed);
  // The application's read is about to send its own miss to the origin: the read-ahead a
  // file's first data read made (held back so as not to go out first) may go now.
  void OwnFetchStarts();
  // A read the host served itself from bytes the cache holds, outside the cache's read path
  // (the site proxy's sendfile): followed as BeforeRead and AfterRead follow a read that hit,
  // so that sequential read-ahead and the learned branches go on past what the file holds.
  void Served(std::span<const fetch::Range> ranges);
  // The handle closes: queued fetches are dropped, running ones waited for; landed predictions
  // never read are counted unused.
  void Stop();
  // Before any read: loads the file's trees now (the metadata in one fetch) and seeds the first
  // clusters of the branches read in the files before, as the first read of a cold file would.
  // For a file opened ahead of its reader (open_sequence.h).
  void WarmUp();

  // For tests and debugging.
  struct Snapshot {
    bool on = false;
    uint32_t level = 0;
    uint64_t window = 0;  // before the file's first read: its window as a seeded file
    uint64_t queued = 0;
    uint64_t in_flight = 0;
    uint64_t landed = 0;
    uint64_t hits = 0;
    uint64_t unused_bytes = 0;
  };
  Snapshot snapshot() const;
  // Blocks until the trees are loaded or read-ahead is off (tests); false on timeout.
  bool WaitDecided(int timeout_ms) const;
  // Blocks until at least `bytes` of predictions landed (tests); false on timeout.
  bool WaitLanded(uint64_t bytes, int timeout_ms) const;

 private:
  enum class State : uint8_t { kIdle, kLoading, kOn, kOff };
  // kStale: judged stale while in flight; kDropped: judged stale and fetched — out of the
  // window, counted unused at Stop() unless read before (readers with reads out of order).
  enum class Pred : uint8_t { kQueued, kInFlight, kLanded, kStale, kDropped };
  struct Prediction {
    uint32_t length = 0;
    Pred state = Pred::kQueued;
    bool later = false;  // a seed, queued as kLater
    uint64_t fetched = 0;
  };
  struct Group {
    std::vector<fetch::Range> ranges;
    uint64_t bytes = 0;
    bool later = false;
  };

  // Waits on cv_ until done() (called with mu_ held) or the timeout; returns done().
  template <typename Done>
  bool WaitFor(Done done, int timeout_ms) const;
  // The file's metadata head and tail in one fetch (see the .cc); blocks until done.
  void PrefetchMetadata();
  // kIdle -> kLoading, and Load() queued.
  void StartLoad();
  void Load();
  void LoadedLocked(std::vector<Group>& groups) FERRY_REQUIRES(mu_);
  void SeedFrom(const std::string& tree, const std::vector<std::string>& branches);
  void RunFetch(const std::vector<fetch::Range>& group);
  // Item 6: notes a read, queues the next window's fetches when it continues a run.
  void Sequential(std::span<const fetch::Range> chunks) FERRY_EXCLUDES(mu_);
  // BeforeRead's and Served's work on a read's non-empty chunks; returns BeforeRead's answer.
  // `idle_header`: read-ahead is idle and the read starts at byte 0 (a header read).
  // `defer_learning`: what the read teaches the branch memory waits for AfterRead, and the
  // first data read's window for its own miss (OwnFetchStarts); `requests`: the read.
  bool Follow(std::span<const fetch::Range> chunks,
              bool& idle_header,
              bool defer_learning,
              std::span<const io::ReadRequest> requests = {}) FERRY_EXCLUDES(mu_);
  void RunSequentialFetch(const fetch::Range& range) FERRY_EXCLUDES(mu_);
  // The branch memory's key of `tree` (FileAheadOptions::memory_scope).
  std::string MemoryKey(const std::string& tree) const;
  // Handles one observation; returns the basket records the read covered.
  size_t ObserveLocked(std::span<const fetch::Range> chunks,
                       std::map<std::string, std::vector<std::string>>& learned)
      FERRY_REQUIRES(mu_);
  void UsedLocked(const fetch::Range& r) FERRY_REQUIRES(mu_);
  void StaleLocked(const fetch::Range& r) FERRY_REQUIRES(mu_);
  // Predicts up to the window and groups the new predictions.
  void FillLocked(std::vector<Group>& groups) FERRY_REQUIRES(mu_);
  // The same for a seeded file not read yet (item 5 above): kLater groups.
  void FillLaterLocked(std::vector<Group>& groups) FERRY_REQUIRES(mu_);
  // That file's window: as a read file's at the top level, in clusters (0: not seeded).
  uint64_t LaterWindowLocked() const FERRY_REQUIRES(mu_);
  // Records `ahead` as queued predictions and groups them (sorted) into fetches of `unit`.
  void QueueLocked(std::vector<fetch::Range>& ahead,
                   uint64_t unit,
                   bool later,
                   std::vector<Group>& groups) FERRY_REQUIRES(mu_);
  // Groups queued predictions in `ranges` (sorted) into fetches of about `unit` bytes.
  void GroupLocked(std::span<const fetch::Range> ranges,
                   uint64_t unit,
                   bool later,
                   std::vector<Group>& groups) FERRY_REQUIRES(mu_);
  uint64_t WindowLocked() const FERRY_REQUIRES(mu_);
  void Submit(std::vector<Group>& groups);
  void Learn(std::map<std::string, std::vector<std::string>>& learned);

  AheadTarget& file_;
  Prefetcher& prefetcher_;
  LinkMeter& meter_;
  const uint64_t max_window_;
  const uint32_t max_chunks_;
  // The URL's path ends in ".root": the file is taken for a ROOT file before its header is
  // read, so a cold open fetches its metadata at once (PrefetchMetadata).
  const bool root_name_;
  const FileAheadOptions options_;

  // Application reads of the handle running now, and how many started while kOwnAheadDepth
  // or more others ran: a reader with several reads of its own in flight (its own read-ahead,
  // such as `ferry analyze agc --reads 4`) keeps its link busy itself, and read-ahead stands
  // aside once kOwnAheadReads such reads started (predictions would only compete with its
  // requests). Two threads that each wait for their cluster are not that.
  static constexpr uint32_t kOwnAheadDepth = 2;
  static constexpr uint32_t kOwnAheadReads = 2;
  std::atomic<uint32_t> reading_{0};
  std::atomic<uint32_t> overlapped_{0};
  std::atomic<State> state_{State::kIdle};
  std::atomic<bool> header_read_{false};
  std::atomic<bool> has_unlearned_{false};  // unlearned_ is not empty

  mutable Mutex mu_;
  mutable CondVar cv_;
  // The predictor. Invariant: set once, by Load() under mu_, before state_ becomes kOn, and
  // never reset. Everything that uses it runs only once read-ahead is on: BeforeRead reads
  // state_ under mu_; seeds, fetches and their follow-ups (SeedFrom, RunFetch, FillLocked)
  // exist only after Load() made it.
  std::unique_ptr<ReadAhead> ra_ FERRY_GUARDED_BY(mu_);
  // Chunks of reads made while the trees loaded, and where each of those reads ends in early_.
  std::vector<fetch::Range> early_ FERRY_GUARDED_BY(mu_);
  std::vector<size_t> early_ends_ FERRY_GUARDED_BY(mu_);
  std::map<uint64_t, Prediction> preds_ FERRY_GUARDED_BY(mu_);  // by offset
  uint64_t queued_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t in_flight_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t landed_ FERRY_GUARDED_BY(mu_) = 0;
  uint32_t level_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t unit_ FERRY_GUARDED_BY(mu_) = 0;  // bytes of baskets of a recent application read
  // Seeds moved to kNow, submitted by the next FillLocked.
  std::vector<Group> promoted_ FERRY_GUARDED_BY(mu_);
  // A first data read's window, until its own miss goes out (OwnFetchStarts).
  std::vector<Group> held_ FERRY_GUARDED_BY(mu_);
  std::atomic<bool> has_held_{false};  // held_ is not empty
  // Branches an application read taught, for the branch memory once the read is served.
  std::map<std::string, std::vector<std::string>> unlearned_ FERRY_GUARDED_BY(mu_);
  bool observed_ FERRY_GUARDED_BY(mu_) = false;            // an application read matched a basket
  uint64_t seed_cluster_bytes_ FERRY_GUARDED_BY(mu_) = 0;  // > 0: seeded (bytes per cluster)
  uint32_t streak_ FERRY_GUARDED_BY(mu_) = 0;              // application reads in sequence in a row
  bool stopping_ FERRY_GUARDED_BY(mu_) = false;
  uint32_t running_ FERRY_GUARDED_BY(mu_) = 0;  // tasks using file_
  uint64_t hits_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t unused_bytes_ FERRY_GUARDED_BY(mu_) = 0;
  // Sequential read-ahead: where the reads will continue, how many followed each other, and up
  // to where fetches were queued.
  uint64_t seq_next_ FERRY_GUARDED_BY(mu_) = 0;
  uint32_t seq_run_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t seq_queued_ FERRY_GUARDED_BY(mu_) = 0;
};

}  // namespace ferry::readahead
