// WriteBehind: the queue and thread that put fetched bytes into the page store off the read
// path, so a first pass runs at origin speed.
//
// Submit() never blocks: when the queued bytes would exceed the bound (Config::writeback_bytes)
// the fetch is refused (the caller counts it as dropped and releases it). The thread takes each
// entry's write lock, stores the bytes, releases the fetch from the entry's in-flight registry,
// and publishes the entry's index when it is due (Config::publish_ms) or requested (last close).
// A write error or lock timeout fails the entry (its handles read from the origin).
//
// Thread-safety: all methods may be called from any thread. The destructor drains the queue
// (bounded by `drain_timeout`) and publishes every dirty entry.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cache/entry.h"

namespace ferry::cache {

class WriteBehind {
 public:
  // on_written(bytes) runs on the writer thread after each batch (capacity accounting);
  // on_idle(entry) after a publish requested by the last close of an entry that stayed closed.
  WriteBehind(const Config& config,
              Counters& counters,
              std::function<void(uint64_t)> on_written,
              std::function<void(const std::shared_ptr<Entry>&)> on_idle = {});
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;
  ~WriteBehind();

  bool Submit(std::shared_ptr<Entry> entry, std::shared_ptr<Fetch> fetch);
  void RequestPublish(std::shared_ptr<Entry> entry);
  // Waits until everything submitted before the call is stored and published (tests, shutdown).
  bool Flush(std::chrono::milliseconds timeout);
  // While blocked (over capacity), submitted fetches are dropped.
  void SetBlocked(bool blocked);

  uint64_t queued_bytes() const;
  // Drains the queue, publishes every dirty entry and stops the thread. Idempotent; the
  // destructor calls it. Submissions after Stop() are refused.
  void Stop();

 private:
  struct Job {
    std::shared_ptr<Entry> entry;
    std::shared_ptr<Fetch> fetch;  // null: publish request
    uint64_t seq = 0;
  };
  void Run();
  void Process(std::vector<Job>& batch);
  void PublishDue(bool force);

  const Config& config_;
  Counters& counters_;
  std::function<void(uint64_t)> on_written_;
  std::function<void(const std::shared_ptr<Entry>&)> on_idle_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::deque<Job> queue_;
  uint64_t queued_bytes_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t done_seq_ = 0;
  bool stop_ = false;
  bool blocked_ = false;
  // Entries with unpublished pages (writer thread only).
  std::vector<std::shared_ptr<Entry>> dirty_;
  std::vector<uint8_t> scratch_;
  std::vector<uint8_t> encode_scratch_;
  std::thread thread_;
};

}  // namespace ferry::cache
