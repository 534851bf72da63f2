// BasketPipeline: compresses and writes sealed baskets on one background thread, so that a
// tree writer serialises the next entries while the codec works (ROOT's implicit
// multithreading compresses baskets on a task pool the same way).
//
// Baskets are written strictly in the order they were submitted, by one thread, so the file is
// byte-identical to writing them inline. Submit() takes the branch's current basket (the
// branch continues in the buffer of a finished basket, recycled rather than allocated) and
// blocks while max_queued_bytes of payload or kSlots baskets wait. Memory: the queued baskets
// plus at most max_queued_bytes of idle buffers. Mark() records, in
// the same order, the compressed total reached at that point (fFlushedBytes at a cluster end).
//
// Contract: while a pipeline runs, only its thread appends to the FileWriter and writes the
// branches' written-basket lists; the owner calls Drain() before it reads either (Record(),
// zip totals, file->end()) or writes anything else into the file. The first error of the
// background thread is sticky: Submit, Mark and Drain return it; baskets after it are dropped.
// The destructor drains and joins. One owner thread calls the methods.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "codec/compression.h"
#include "rootwrite/basket_writer.h"
#include "rootwrite/file_writer.h"

namespace ferry::rootwrite {

class BasketPipeline {
 public:
  static constexpr size_t kSlots = 1024;

  BasketPipeline(FileWriter& file, codec::Setting setting, size_t max_queued_bytes);
  BasketPipeline(const BasketPipeline&) = delete;
  BasketPipeline& operator=(const BasketPipeline&) = delete;
  ~BasketPipeline();

  // Seals branch's current basket (nothing when it is empty) and queues it.
  Status Submit(BranchBuffer& branch);
  // Queues a marker: *out = the compressed bytes of every basket submitted before it, once
  // they are written (read it after Drain()).
  Status Mark(int64_t* out);
  // Waits until everything queued is written.
  Status Drain();
  // Compressed record bytes written so far (any thread; exact after Drain()).
  int64_t zip_bytes() const { return zip_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    SealedBasket basket;      // basket.branch == nullptr: a marker
    int64_t* mark = nullptr;  // marker target
  };
  // Waits for a free slot and returns it, or the sticky error. The slot stays outside the
  // queue (the background thread does not touch it) until Publish() queues it.
  Result<Slot*> Acquire(size_t bytes) FERRY_REQUIRES(mu_);
  void Publish(size_t bytes) FERRY_REQUIRES(mu_);
  void Run();

  FileWriter* file_;
  codec::Setting setting_;
  size_t max_queued_bytes_;
  BasketScratch scratch_;  // the background thread's
  std::vector<Slot> slots_;

  Mutex mu_;
  CondVar work_;                            // a slot was queued, or stop
  CondVar space_;                           // a slot was finished
  size_t head_ FERRY_GUARDED_BY(mu_) = 0;   // next slot to write
  size_t count_ FERRY_GUARDED_BY(mu_) = 0;  // queued slots, the one being written included
  size_t queued_bytes_ FERRY_GUARDED_BY(mu_) = 0;
  size_t retained_bytes_ FERRY_GUARDED_BY(mu_) = 0;  // buffer capacity held by idle slots
  bool stop_ FERRY_GUARDED_BY(mu_) = false;
  std::unique_ptr<Error> error_ FERRY_GUARDED_BY(mu_);
  std::atomic<int64_t> zip_bytes_{0};
  std::thread thread_;
};

}  // namespace ferry::rootwrite
