// WriteBehind: the queue and thread that put fetched bytes into the page store off the read
// path, so a first pass runs at origin speed.
//
// Submit() waits at most Config::writeback_wait_ms (0: never) for room when the queued bytes
// would exceed the bound (Config::writeback_bytes): a reader that outruns the disk (a copy
// from a fast origin) is slowed to the writer's pace instead of leaving holes in the cache.
// Without room by then the fetch is refused (the caller counts it as dropped and releases it),
// and so is every fetch after it, at once, until the writer has emptied half the queue: a
// stuck disk costs the readers one wait, not one per fetch. The thread takes each entry's
// write lock, stores the bytes, releases each fetch from the entry's in-flight registry and
// its room in the queue as soon as it is stored, and publishes the entry's index when it is
// due (Config::publish_ms) or requested (last close). A write error or lock timeout fails the
// entry (its handles read from the origin).
//
// Thread-safety: all methods may be called from any thread. The destructor drains the queue
// (bounded by `drain_timeout`) and publishes every dirty entry.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "cache/entry.h"

namespace ferry::cache {

class WriteBehind {
 public:
  // on_written(bytes) runs on the writer thread after each batch (capacity accounting);
  // on_idle(entry) after a publish requested by the last close of an entry that stayed closed,
  // or by RequestPublish(entry, then_idle = true).
  WriteBehind(const Config& config,
              Counters& counters,
              std::function<void(uint64_t)> on_written,
              std::function<void(const std::shared_ptr<Entry>&)> on_idle = {});
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;
  ~WriteBehind();

  bool Submit(std::shared_ptr<Entry> entry, std::shared_ptr<Fetch> fetch);
  // Publishes `entry` after what was submitted before; `then_idle`: on_idle(entry) follows
  // even while handles have it open (the reader moved past it: Cache::NoteRead).
  void RequestPublish(std::shared_ptr<Entry> entry, bool then_idle = false);
  // Waits until everything submitted before the call is stored and published (tests, shutdown).
  bool Flush(std::chrono::milliseconds timeout);
  // While blocked (over capacity), submitted fetches are dropped.
  void SetBlocked(bool blocked);

  uint64_t queued_bytes() const;
  // Nothing queued, nothing being stored, nothing stored and not yet published: what was
  // submitted is in the published index (the site proxy's status shows it; tests wait for it).
  bool idle() const;
  // Drains the queue, publishes every dirty entry and stops the thread. Idempotent; the
  // destructor calls it. Submissions after Stop() are refused.
  void Stop();

 private:
  struct Job {
    std::shared_ptr<Entry> entry;
    std::shared_ptr<Fetch> fetch;  // null: publish request (or released)
    uint64_t bytes = 0;            // the fetch's room in the queue, until released
    uint64_t seq = 0;
    bool then_idle = false;  // a publish request that asks for on_idle with handles open
  };
  void Run() FERRY_EXCLUDES(mu_);
  // Moves the next batch (one entry's jobs) out of the queue; false when stopped and drained.
  bool TakeBatch(std::vector<Job>& batch) FERRY_EXCLUDES(mu_);
  // Records the batch done and wakes Flush() callers.
  void FinishBatch(const std::vector<Job>& batch) FERRY_EXCLUDES(mu_);
  void Process(std::vector<Job>& batch);
  // Waits (Config::writeback_wait_ms at most) until `bytes` fit in the queue; see above.
  void WaitForRoom(uint64_t bytes) FERRY_REQUIRES(mu_);
  // A job is done with: out of the in-flight registry, its buffers and queue room freed.
  void Release(Entry& entry, Job& j) FERRY_EXCLUDES(mu_);
  void Freed(uint64_t bytes) FERRY_EXCLUDES(mu_);
  void PublishDue(bool force);

  const Config& config_;
  Counters& counters_;
  std::function<void(uint64_t)> on_written_;
  std::function<void(const std::shared_ptr<Entry>&)> on_idle_;
  mutable Mutex mu_;
  CondVar cv_;       // work queued or stop
  CondVar done_cv_;  // done_seq_ advanced
  CondVar room_cv_;  // queued_bytes_ went down (or stop, or blocked)
  std::deque<Job> queue_ FERRY_GUARDED_BY(mu_);
  uint64_t queued_bytes_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t next_seq_ FERRY_GUARDED_BY(mu_) = 1;
  uint64_t done_seq_ FERRY_GUARDED_BY(mu_) = 0;
  bool stop_ FERRY_GUARDED_BY(mu_) = false;
  bool blocked_ FERRY_GUARDED_BY(mu_) = false;
  bool stalled_ FERRY_GUARDED_BY(mu_) = false;  // a wait for room timed out (WaitForRoom)
  bool idle_ FERRY_GUARDED_BY(mu_) = true;      // set by the writer thread after each batch
  // Entries with unpublished pages (writer thread only).
  std::vector<std::shared_ptr<Entry>> dirty_;
  std::vector<uint8_t> scratch_;
  std::vector<uint8_t> encode_scratch_;
  std::thread thread_;
};

}  // namespace ferry::cache
