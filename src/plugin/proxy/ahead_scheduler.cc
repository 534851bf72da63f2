#include "plugin/proxy/ahead_scheduler.h"

#include <algorithm>

namespace ferry::proxy {

AheadScheduler::AheadScheduler(size_t threads) : threads_wanted_(std::max<size_t>(threads, 1)) {}

AheadScheduler::~AheadScheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    now_.clear();
    later_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    t.join();
  }
}

void AheadScheduler::Submit(Priority priority, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      return;
    }
    (priority == Priority::kNow ? now_ : later_).push_back(std::move(task));
    if (threads_.empty()) {
      threads_.reserve(threads_wanted_);
      for (size_t i = 0; i < threads_wanted_; ++i) {
        threads_.emplace_back([this] { Run(); });
      }
    }
  }
  cv_.notify_one();
}

size_t AheadScheduler::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_.size() + later_.size();
}

void AheadScheduler::Run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !now_.empty() || !later_.empty(); });
      if (stop_) {
        return;
      }
      std::deque<std::function<void()>>& q = now_.empty() ? later_ : now_;
      task = std::move(q.front());
      q.pop_front();
    }
    task();
  }
}

}  // namespace ferry::proxy
