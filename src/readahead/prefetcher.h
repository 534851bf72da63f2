// Prefetcher: the read-ahead fetches of every file of one Cache (one per process and cache
// directory), run on a few threads of its own, the files being read first.
//
// Work comes as tasks from FileAhead (file_ahead.h): loading a file's trees, and fetching a
// group of predicted baskets. A fetch task starts only when
// - fewer than `max_fetches` (kMaxFetches) fetches run, or `max_fetches_app_waits`
//   (kMaxFetchesWhileAppWaits) while the application waits
//   on an origin fetch of its own (AppFetchBegin/End): read-ahead then leaves it most of the
//   link (its fetches also keep off the channel the application's requests use, see
//   CachedFile::ReadPieces), without stopping (a reader that always has a fetch of its own
//   out would never get read-ahead otherwise);
// - the process's read-ahead bytes (in flight, or fetched and not yet read) stay within
//   `readahead_max` after it (or none are outstanding).
// Tasks of kNow (predictions from reads of files being read) run before kLater (seeds of files
// opened but not read yet, and their next clusters while the link is idle); kNow tasks in
// submission order, kLater ones by their file's ReadOrder (then in submission order). kLater tasks
// take what the files being read leave: at most kMaxLaterFetches at once, none while the
// application waits on a fetch of its own, and only while the process's read-ahead bytes stay
// within half of `readahead_max`, so the file being read always has room in the budget and most of
// the link. Both hosts now set `max_fetches_app_waits` to `max_fetches`, so nothing is held back
// while a read waits: the site proxy because one of its many clients nearly always waits, the
// client plug-in because an in-order reader's misses are mostly the fetches read-ahead would make
// next (cache/config.h, readahead_fetches_app_waits).
//
// Also kept here, per process: the link meters (per origin host, link_meter.h) and the branch
// memory across files (read_ahead.h).
// Thread-safety: every method may be called from any thread, also from a task. Stop() (or the
// destructor) drops queued tasks and joins the threads; tasks submitted later are dropped.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "readahead/link_meter.h"
#include "readahead/read_ahead.h"

namespace ferry::readahead {

class Prefetcher {
 public:
  enum class Kind : uint8_t { kLoad, kNow, kLater };
  static constexpr size_t kMaxFetches = 8;
  static constexpr size_t kMaxFetchesWhileAppWaits = 2;
  static constexpr size_t kMaxLoads = 4;
  // Of kMaxFetches, what seeds may take: two stay free for the files being read. When seeds
  // had 2 in all, a reader of small files opened ahead (20 LZMA-9 files of 2.3 MB read) got
  // ~45 MB/s of a 114 MB/s link: each file's seeds waited for the last one's.
  static constexpr size_t kMaxLaterFetches = kMaxFetches - 2;

  // `max_bytes`: the process's bound on read-ahead bytes outstanding (readahead_max);
  // `max_fetches`, `max_fetches_app_waits`: fetches at once (above).
  explicit Prefetcher(uint64_t max_bytes,
                      size_t max_fetches = kMaxFetches,
                      size_t max_fetches_app_waits = kMaxFetchesWhileAppWaits);
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  ~Prefetcher();

  // Queues `task`; a fetch task declares the bytes it may fetch (for the budget), a kLater one
  // its file's ReadOrder.
  void Submit(Kind kind, uint64_t bytes, std::function<void()> task, std::string order = {});
  // Where the file `path` ("...dir/name") comes in the order an in-order reader reads its
  // files: its directory's place among the directories of the files seen so far, then its name
  // (a TChain over datasets, each in name order). Seeds of the files opened ahead go out in
  // that order rather than as the files were opened and loaded: the reader then finds each
  // next file's clusters there before those of files it reads later (issue 38: the seeds of 5
  // zlib-1 and 3 LZMA-9 files went out before the zlib-1 files' next clusters).
  // At most kMaxOrderDirs directories are remembered.
  std::string ReadOrder(const std::string& path);
  static constexpr size_t kMaxOrderDirs = 4096;
  void Stop();

  // The application waits on an origin fetch of its own (cached_file.cc).
  void AppFetchBegin();
  void AppFetchEnd();

  // Read-ahead bytes in flight or fetched and not yet read, over every file (FileAhead keeps it).
  void AddOutstanding(int64_t delta);
  uint64_t outstanding() const { return outstanding_.load(std::memory_order_relaxed); }
  uint64_t max_bytes() const { return max_bytes_; }

  // The meter of origin `host` ("host:port"); lives as long as the Prefetcher.
  LinkMeter& Meter(const std::string& host);
  BranchMemory& branches() { return branches_; }
  // Bytes at the end of a ROOT file that hold its metadata (TTree records, streamer info, keys
  // list), as the last file loaded showed, plus a quarter; kDefaultMetadataTail before any.
  // Files of one dataset come from one writer and are laid out alike.
  static constexpr uint64_t kDefaultMetadataTail = 256 << 10;
  static constexpr uint64_t kMaxMetadataTail = 16 << 20;
  uint64_t metadata_tail() const { return metadata_tail_.load(std::memory_order_relaxed); }
  void NoteMetadataTail(uint64_t bytes) {
    metadata_tail_.store(std::min(bytes + bytes / 4, kMaxMetadataTail), std::memory_order_relaxed);
  }
  // Bytes at the start of a ROOT file that hold its metadata, learned alike: the header and
  // top directory of a TTree file (a few hundred bytes), and of an RNTuple file also the
  // RNTuple's header, which its writer puts after the first page (ferry's at 4 KiB, 16-31 KiB
  // long in the AGC sets). kDefaultMetadataHead before any file was loaded covers such a header;
  // reads that start past kMaxMetadataHead are not counted (a TTree record in the middle).
  static constexpr uint64_t kDefaultMetadataHead = 64 << 10;
  static constexpr uint64_t kMaxMetadataHead = 1 << 20;
  uint64_t metadata_head() const { return metadata_head_.load(std::memory_order_relaxed); }
  void NoteMetadataHead(uint64_t bytes) {
    metadata_head_.store(std::min(bytes + bytes / 4, kMaxMetadataHead), std::memory_order_relaxed);
  }

  size_t queued() const;

 private:
  struct Task {
    Kind kind;
    uint64_t bytes;
    std::function<void()> run;
    std::string order;  // kLater: ReadOrder of its file
  };
  void Run() FERRY_EXCLUDES(mu_);
  // The next task allowed to start, or false.
  bool TakeLocked(Task& out) FERRY_REQUIRES(mu_);
  // The kLater task to run next: the first of the earliest ReadOrder.
  std::deque<Task>::iterator NextLaterLocked() FERRY_REQUIRES(mu_);

  const uint64_t max_bytes_;
  const size_t max_fetches_;
  const size_t max_fetches_app_waits_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Task> loads_ FERRY_GUARDED_BY(mu_);
  std::deque<Task> now_ FERRY_GUARDED_BY(mu_);
  std::deque<Task> later_ FERRY_GUARDED_BY(mu_);
  size_t running_fetches_ FERRY_GUARDED_BY(mu_) = 0;
  size_t running_loads_ FERRY_GUARDED_BY(mu_) = 0;
  size_t running_later_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t starting_bytes_ FERRY_GUARDED_BY(mu_) = 0;  // declared bytes of fetch tasks running
  uint32_t app_fetches_ FERRY_GUARDED_BY(mu_) = 0;
  bool stop_ FERRY_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
  std::map<std::string, size_t> dirs_ FERRY_GUARDED_BY(mu_);  // ReadOrder: directory -> place
  size_t next_place_ FERRY_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> outstanding_{0};

  Mutex meters_mu_;
  std::map<std::string, std::unique_ptr<LinkMeter>> meters_ FERRY_GUARDED_BY(meters_mu_);
  BranchMemory branches_;
  std::atomic<uint64_t> metadata_tail_{kDefaultMetadataTail};
  std::atomic<uint64_t> metadata_head_{kDefaultMetadataHead};
};

}  // namespace ferry::readahead
