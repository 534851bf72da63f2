// CompletionOrder: completes tasks in the order they were started, whatever order they finish.
//
//   CompletionOrder order;
//   const uint64_t ticket = order.Take();                 // when a task is queued
//   ...                                                    // served by any worker, any order
//   order.Finish(ticket, [aio] { aio->doneRead(); });      // run in ticket order
//
// Why the proxy needs it: XrdXrootd serves a kXR_pgread in chunks of asynchronous reads and
// sends each chunk's answer when its read completes, with the chunk's offset. XrdCl 5.5's page
// reader places the data by that offset but the checksums in arrival order
// (XrdClAsyncPageReader.hh: SetRsp never moves the digest index), so chunks answered out of
// order give pages the checksums of other pages: the client re-reads every such page, one
// request each (~800 in one proxy_basic run), and when a re-read's answer races the end of
// the first answer's check its correct checksum is lost (the checksum vector handed to the
// application stays wrong, though the bytes are right). The proxy's workers serve a file's
// chunks concurrently, so their completions are put back in submission order here.
//
// - Every ticket taken must be finished exactly once, or later tickets wait for ever (the
//   proxy finishes each queued read, also on errors).
// - Finish runs the tasks that became due on the calling thread, outside the lock, one thread
//   at a time, in ticket order; a task must not call Finish.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "base/mutex.h"

namespace ferry::proxy {

class CompletionOrder {
 public:
  using Task = std::function<void()>;

  // The next ticket; tickets are consecutive from 0.
  uint64_t Take();

  // Runs `task` once every earlier ticket's task has run (now, on this thread, if they have).
  void Finish(uint64_t ticket, Task task);

  // Tickets finished but waiting for an earlier one.
  size_t waiting() const;

 private:
  mutable Mutex mu_;
  uint64_t next_ticket_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t next_due_ FERRY_GUARDED_BY(mu_) = 0;
  bool running_ FERRY_GUARDED_BY(mu_) = false;  // a thread is running due tasks
  std::map<uint64_t, Task> ready_ FERRY_GUARDED_BY(mu_);
};

}  // namespace ferry::proxy
