// Copies served through (issue 39): the client plug-in's bypass of bulk readers
// (readahead/bulk_detect.h, `bypass_fraction` in cache/config.h) on the site proxy's side, so
// that a whole-file copy (xrdcp, an HTTP GET of the whole file) does not evict the working set
// of the analyses a site serves.
//
// CopyThrough watches one handle's plain and page reads with a BulkDetector. Until it reads as a
// copy, every read goes through the cache as usual. The copy is recognised early enough that
// what it has cached stays within `copy_cache_fraction` of the file: at DetectAt(), its reads in
// flight (kCopyInFlight beyond the in-order prefix: xrdcp's 4 parallel 8 MiB chunks) and the
// sequential read-ahead those reads started (FileAhead::kSeqWindowMax) still end before the
// fraction. From then on, a read whose bytes are all held, or that ends before what the cache
// was asked for until then (the reads so far and their read-ahead window, whose fetches it
// joins), is served by the cache without read-ahead (a warm copy stays warm and fetches
// nothing, and nothing is fetched twice), and any other read is served through:
// CopyStream reads it from the origin into memory, with its own read-ahead, and never stores it.
//
// CopyStream keeps the copy as fast as the cache's own sequential read-ahead was (it is the same
// window, kWindow, in the same 2 MiB fetches) without writing and checksumming what it will not
// keep: blocks of kBlock bytes are fetched ahead of the furthest read on the caller's task
// runner (the proxy's workers); a read waits for its blocks (or fetches those no task started
// yet itself, so that a read never waits on a queued task) and a block read whole is freed once
// kKeepRead more recent ones were (a page read again after that is read from the origin
// alone). At most kMaxBlocks + kKeepRead blocks (80 MiB) are held per handle, and all copies
// together hold at most the proxy's CopyBudget (`ferry.copy_memory`, copy_budget.h): over it, a
// copy fetches fewer blocks ahead, keeps fewer read whole, and reads the bytes of a block it
// could not get straight from the origin into the client's buffer, so it never waits for
// memory. A block that failed is dropped, and its read is then served by the cache's own path
// (retries with backoff, the origin's error): fail-open, as everywhere in the cache.
//
// Thread-safety: Read may be called from many threads at once; Stop waits for running fetches
// and must not run concurrently with Read. Lifetime: tasks given to the runner keep the stream's
// state alive and return at once after Stop.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "base/result.h"
#include "cache/cache.h"
#include "cache/origin.h"
#include "fetch/range.h"
#include "io/byte_source.h"
#include "plugin/proxy/copy_budget.h"
#include "readahead/bulk_detect.h"

namespace ferry::proxy {

// The proxy's counters of copies (proxy-status.json: copies_detected, copy_bytes_through).
struct CopyCounters {
  std::atomic<uint64_t> copies{0};         // handles recognised as copies
  std::atomic<uint64_t> bytes_through{0};  // bytes served to copies from the origin, uncached
};

class CopyStream {
 public:
  // Runs a task on another thread (the proxy's worker pool; tests: a thread).
  using Runner = std::function<void(std::function<void()>)>;
  static constexpr uint64_t kBlock = 2ull << 20;    // one origin read (the engine's kSeqFetch)
  static constexpr uint64_t kWindow = 16ull << 20;  // fetched ahead of the furthest read
  // Blocks held at most: the window, plus xrdcp's 4 x 8 MiB chunks read at once.
  static constexpr size_t kMaxBlocks = 24;
  // Blocks read whole kept besides, the most recent ones: XrdCl reads a page of a pgread again
  // when its checksum does not match (a 4 KiB read soon after the first), which would otherwise
  // cost a round trip to the origin. That was ~15% of an xrdcp's pages while the proxy answered
  // a pgread's chunks out of order (completion_order.h); now it is the rare damaged page. As
  // many as xrdcp's 4 parallel 8 MiB chunks hold, since blocks retire in any order among them.
  static constexpr size_t kKeepRead = 16;

  // `budget`: the memory shared by every copy (null: none, only the per-handle bounds).
  CopyStream(std::shared_ptr<cache::Origin> origin,
             uint64_t size,
             Runner runner,
             CopyBudget* budget = nullptr);
  ~CopyStream();
  CopyStream(const CopyStream&) = delete;
  CopyStream& operator=(const CopyStream&) = delete;

  // Reads every request (inside [0, size)) from the origin; each gets its own status. Error: the
  // first failure (the origin's).
  Status Read(std::span<io::ReadRequest> requests);
  // Stops read-ahead: queued tasks return at once, running fetches are waited for, the blocks
  // are freed (and given back to the budget), the origin is released. Idempotent.
  void Stop();
  uint64_t origin_bytes() const;
  uint64_t origin_requests() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

class CopyThrough {
 public:
  // The copy's own reads at once beyond its in-order prefix (xrdcp: 4 chunks of 8 MiB).
  static constexpr uint64_t kCopyInFlight = 32ull << 20;
  // A copy is recognised no earlier: an analysis that reads a file's first clusters whole (its
  // header and metadata, every branch of a cluster) is not taken for one.
  static constexpr uint64_t kMinPrefix = 16ull << 20;

  // The rule for a handle of a file of `size` bytes; null when it does not apply: `fraction`
  // >= 1 (copies cached whole) or a file smaller than BulkDetector::kMinBytes.
  static std::unique_ptr<CopyThrough> For(uint64_t size,
                                          double fraction,
                                          std::shared_ptr<cache::Origin> origin,
                                          CopyStream::Runner runner,
                                          CopyCounters* counters,
                                          CopyBudget* budget = nullptr);
  // The in-order prefix at which a copy is recognised: what leaves room before the fraction for
  // its reads in flight and their read-ahead, but at least kMinPrefix and 1% of the file (the
  // detector's least). Files under (kMinPrefix + 48 MiB) / fraction therefore keep up to
  // kMinPrefix + 48 MiB of a copy.
  static uint64_t DetectAt(uint64_t size, double fraction);

  CopyThrough(uint64_t size,
              double fraction,
              std::shared_ptr<cache::Origin> origin,
              CopyStream::Runner runner,
              CopyCounters* counters,
              CopyBudget* budget = nullptr);

  // Reads `requests` of the handle `cached`: through the cache until the handle reads as a copy,
  // then as described above. `through` receives the bytes served through uncached.
  Status Read(cache::CachedFile& cached, std::span<io::ReadRequest> requests, uint64_t& through);
  bool copying() const { return copying_.load(std::memory_order_relaxed); }
  // A read the proxy served without Read (sendfile of held bytes, zero_copy.h): counted towards
  // the copy's in-order prefix as Read counts its reads. Returns copying() after it.
  bool NoteServed(const fetch::Range& sent);
  // Stops the stream (CopyStream::Stop); call before the origin handle is closed or reused.
  void Stop() { stream_.Stop(); }
  const CopyStream& stream() const { return stream_; }

 private:
  // Notes the reads that reach past the in-order prefix; true once the handle reads as a copy.
  bool NoteProgress(std::span<const fetch::Range> reads);
  // The handle reads as a copy from now on (once): sets the frontier, counts the copy.
  void Recognised();
  // Whether a copy's read is served by the cache: its bytes are held, or they end before the
  // frontier (being fetched by read-ahead, which the read joins, or about to be).
  bool Cached(cache::CachedFile& cached, std::span<const io::ReadRequest> requests);

  readahead::BulkDetector detector_;
  std::atomic<uint64_t> furthest_{0};  // the furthest byte read before the copy was recognised
  // furthest_ plus the read-ahead window when it was recognised: what the cache may have
  // fetched or be fetching for it (set before copying_).
  std::atomic<uint64_t> frontier_{0};
  std::atomic<bool> copying_{false};
  CopyStream stream_;
  CopyCounters* counters_;
};

}  // namespace ferry::proxy
