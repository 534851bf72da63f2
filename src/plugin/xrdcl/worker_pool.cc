#include "plugin/xrdcl/worker_pool.h"

#include <algorithm>

namespace ferry::plugin {

WorkerPool::WorkerPool(size_t threads) : size_(std::max<size_t>(threads, 1)) {}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    t.join();
  }
}

void WorkerPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    if (threads_.empty()) {
      threads_.reserve(size_);
      for (size_t i = 0; i < size_; ++i) {
        threads_.emplace_back([this] { Run(); });
      }
    }
  }
  cv_.notify_one();
}

void WorkerPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
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
