// AheadScheduler: the proxy's read-ahead fetches of all files, run a bounded number at a time,
// the ones a client's vector read just asked for before the seeds of files not read yet.
//
// Why bounded: every fetch in flight shares the origin's link (and XrdXrootd serves each of the
// proxy's origin connections one request after another). With many fetches of future units
// queued there, a client's next unit waits behind all of them; with about a bandwidth-delay
// product in flight the link stays busy and what is needed next goes first.
// Tasks of one priority run in submission order (a file's predictions are submitted in cluster
// order). Threads start with the first task and run until the process exits.
// Thread-safety: Submit may be called from any thread, also from a task.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace ferry::proxy {

class AheadScheduler {
 public:
  enum class Priority { kNow, kLater };

  // `threads`: fetches in flight at most (>= 1).
  explicit AheadScheduler(size_t threads);
  AheadScheduler(const AheadScheduler&) = delete;
  AheadScheduler& operator=(const AheadScheduler&) = delete;
  // Drops queued tasks, waits for running ones.
  ~AheadScheduler();

  void Submit(Priority priority, std::function<void()> task) FERRY_EXCLUDES(mu_);
  size_t queued() const FERRY_EXCLUDES(mu_);

 private:
  void Run() FERRY_EXCLUDES(mu_);
  const size_t threads_wanted_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> now_ FERRY_GUARDED_BY(mu_);
  std::deque<std::function<void()>> later_ FERRY_GUARDED_BY(mu_);
  bool stop_ FERRY_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ FERRY_GUARDED_BY(mu_);
};

}  // namespace ferry::proxy
