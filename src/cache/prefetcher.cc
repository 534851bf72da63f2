#include "cache/prefetcher.h"

#include <algorithm>

namespace ferry::cache {

Prefetcher::Prefetcher(uint64_t max_bytes) : max_bytes_(std::max<uint64_t>(max_bytes, 1)) {}

Prefetcher::~Prefetcher() {
  Stop();
}

void Prefetcher::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    loads_.clear();
    now_.clear();
    later_.clear();
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) {
    t.join();
  }
}

void Prefetcher::Submit(Kind kind, uint64_t bytes, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      return;
    }
    std::deque<Task>& q = kind == Kind::kLoad ? loads_ : kind == Kind::kNow ? now_ : later_;
    q.push_back({kind, bytes, std::move(task)});
    if (threads_.empty()) {
      // Started with the first task: a process that never reads ahead runs none.
      threads_.reserve(kMaxFetches + kMaxLoads);
      for (size_t i = 0; i < kMaxFetches + kMaxLoads; ++i) {
        threads_.emplace_back([this] { Run(); });
      }
    }
  }
  cv_.notify_one();
}

size_t Prefetcher::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loads_.size() + now_.size() + later_.size();
}

void Prefetcher::AppFetchBegin() {
  std::lock_guard<std::mutex> lock(mu_);
  ++app_fetches_;
}

void Prefetcher::AppFetchEnd() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (app_fetches_ > 0) {
      --app_fetches_;
    }
  }
  cv_.notify_one();
}

void Prefetcher::AddOutstanding(int64_t delta) {
  if (delta >= 0) {
    outstanding_.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
    return;
  }
  outstanding_.fetch_sub(static_cast<uint64_t>(-delta), std::memory_order_relaxed);
  // Room in the budget: a waiting fetch may start. The lock orders this with the waiter's check.
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_one();
}

LinkMeter& Prefetcher::Meter(const std::string& host) {
  std::lock_guard<std::mutex> lock(meters_mu_);
  std::unique_ptr<LinkMeter>& m = meters_[host];
  if (!m) {
    m = std::make_unique<LinkMeter>();
  }
  return *m;
}

bool Prefetcher::TakeLocked(Task& out) {
  if (!loads_.empty() && running_loads_ < kMaxLoads) {
    out = std::move(loads_.front());
    loads_.pop_front();
    ++running_loads_;
    return true;
  }
  if (running_fetches_ >= (app_fetches_ > 0 ? kMaxFetchesWhileAppWaits : kMaxFetches)) {
    return false;
  }
  for (std::deque<Task>* q : {&now_, &later_}) {
    if (q->empty()) {
      continue;
    }
    // In order: a task that does not fit waits for room rather than being overtaken.
    const uint64_t used = outstanding_.load(std::memory_order_relaxed) + starting_bytes_;
    if (used != 0 && used + q->front().bytes > max_bytes_) {
      return false;
    }
    out = std::move(q->front());
    q->pop_front();
    ++running_fetches_;
    starting_bytes_ += out.bytes;
    return true;
  }
  return false;
}

void Prefetcher::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Task task;
    cv_.wait(lock, [&] { return stop_ || TakeLocked(task); });
    if (stop_) {
      return;
    }
    lock.unlock();
    cv_.notify_one();  // another task may be allowed too
    task.run();
    task.run = nullptr;  // what it captured goes before the lock is taken again
    lock.lock();
    if (task.kind == Kind::kLoad) {
      --running_loads_;
    } else {
      --running_fetches_;
      starting_bytes_ -= task.bytes;
    }
    cv_.notify_one();
  }
}

}  // namespace ferry::cache
