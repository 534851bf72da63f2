// WorkerPool: a fixed set of threads running queued tasks (the plug-in's miss path: tasks block
// on the origin, the application's thread does not).
// The threads start with the first Submit(), so a process that loads the plug-in and never
// misses (xrdfs, a short tool, a warm pass) starts none.
// Thread-safety: Submit() from any thread. The destructor runs the queued tasks, then joins.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace ferry::plugin {

class WorkerPool {
 public:
  explicit WorkerPool(size_t threads);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool();

  void Submit(std::function<void()> task);

 private:
  void Run();
  size_t size_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ FERRY_GUARDED_BY(mu_);
  bool stop_ FERRY_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ FERRY_GUARDED_BY(mu_);
};

}  // namespace ferry::plugin
