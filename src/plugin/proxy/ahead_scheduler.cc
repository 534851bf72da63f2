#include "plugin/proxy/ahead_scheduler.h"

#include <algorithm>

namespace ferry::proxy {

AheadScheduler::AheadScheduler(size_t threads) : threads_wanted_(std::max<size_t>(threads, 1)) {}

AheadScheduler::~AheadScheduler() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stop_ = true;
    now_.clear();
    later_.clear();
    threads.swap(threads_);
  }
  cv_.NotifyAll();
  for (std::thread& t : threads) {
    t.join();
  }
}

void AheadScheduler::Submit(Priority priority, std::function<void()> task) {
  {
    MutexLock lock(mu_);
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
  cv_.NotifyOne();
}

size_t AheadScheduler::queued() const {
  MutexLock lock(mu_);
  return now_.size() + later_.size();
}

void AheadScheduler::Run() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(mu_);
      while (!stop_ && now_.empty() && later_.empty()) {
        cv_.Wait(mu_);
      }
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
