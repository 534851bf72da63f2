#include "plugin/xrdcl/worker_pool.h"

#include <algorithm>

namespace ferry::plugin {

WorkerPool::WorkerPool(size_t threads) : size_(std::max<size_t>(threads, 1)) {}

WorkerPool::~WorkerPool() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stop_ = true;
    threads.swap(threads_);  // no Submit() runs once the pool is being destroyed
  }
  cv_.NotifyAll();
  for (auto& t : threads) {
    t.join();
  }
}

void WorkerPool::Submit(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    tasks_.push_back(std::move(task));
    if (threads_.empty()) {
      threads_.reserve(size_);
      for (size_t i = 0; i < size_; ++i) {
        threads_.emplace_back([this] { Run(); });
      }
    }
  }
  cv_.NotifyOne();
}

void WorkerPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(mu_);
      while (!stop_ && tasks_.empty()) {
        cv_.Wait(mu_);
      }
      if (tasks_.empty()) {
        return;
      }
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace ferry::plugin
