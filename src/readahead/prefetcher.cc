#include "readahead/prefetcher.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <iterator>

namespace ferry::readahead {

Prefetcher::Prefetcher(uint64_t max_bytes, size_t max_fetches, size_t max_fetches_app_waits)
    : max_bytes_(std::max<uint64_t>(max_bytes, 1)),
      max_fetches_(std::max<size_t>(max_fetches, 1)),
      max_fetches_app_waits_(std::clamp<size_t>(max_fetches_app_waits, 1, max_fetches_)) {}

Prefetcher::~Prefetcher() {
  Stop();
}

void Prefetcher::Stop() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stop_ = true;
    loads_.clear();
    now_.clear();
    later_.clear();
    threads.swap(threads_);
  }
  cv_.NotifyAll();
  for (std::thread& t : threads) {
    t.join();
  }
}

void Prefetcher::Submit(Kind kind, uint64_t bytes, std::function<void()> task, std::string order) {
  {
    MutexLock lock(mu_);
    if (stop_) {
      return;
    }
    std::deque<Task>& q = kind == Kind::kLoad ? loads_ : kind == Kind::kNow ? now_ : later_;
    q.push_back({kind, bytes, std::move(task), std::move(order)});
    if (threads_.empty()) {
      // Started with the first task: a process that never reads ahead runs none.
      threads_.reserve(max_fetches_ + kMaxLoads);
      for (size_t i = 0; i < max_fetches_ + kMaxLoads; ++i) {
        threads_.emplace_back([this] { Run(); });
      }
    }
  }
  cv_.NotifyOne();
}

std::string Prefetcher::ReadOrder(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash);
  size_t place = 0;
  {
    MutexLock lock(mu_);
    if (dirs_.size() >= kMaxOrderDirs && dirs_.count(dir) == 0) {
      // A long-lived host (the site proxy) sees directories without end: forget them. Places
      // keep growing, so a directory seen again comes after the ones seen before.
      dirs_.clear();
    }
    place = dirs_.try_emplace(dir, next_place_++).first->second;
  }
  // Fixed width: the places compare as numbers, then the names.
  std::array<char, 24> prefix{};
  std::snprintf(prefix.data(), prefix.size(), "%016zx/", place);
  return prefix.data() + path.substr(slash == std::string::npos ? 0 : slash + 1);
}

size_t Prefetcher::queued() const {
  MutexLock lock(mu_);
  return loads_.size() + now_.size() + later_.size();
}

void Prefetcher::AppFetchBegin() {
  MutexLock lock(mu_);
  ++app_fetches_;
}

void Prefetcher::AppFetchEnd() {
  {
    MutexLock lock(mu_);
    if (app_fetches_ > 0) {
      --app_fetches_;
    }
  }
  cv_.NotifyOne();
}

void Prefetcher::AddOutstanding(int64_t delta) {
  if (delta >= 0) {
    outstanding_.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
    return;
  }
  outstanding_.fetch_sub(static_cast<uint64_t>(-delta), std::memory_order_relaxed);
  // Room in the budget: a waiting fetch may start. The lock orders this with the waiter's check.
  { MutexLock lock(mu_); }
  cv_.NotifyOne();
}

LinkMeter& Prefetcher::Meter(const std::string& host) {
  MutexLock lock(meters_mu_);
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
  // An application read waits on a miss, and the host holds read-ahead back meanwhile.
  const bool app_waits = app_fetches_ > 0 && max_fetches_app_waits_ < max_fetches_;
  if (running_fetches_ >= (app_waits ? max_fetches_app_waits_ : max_fetches_)) {
    return false;
  }
  const uint64_t used = outstanding_.load(std::memory_order_relaxed) + starting_bytes_;
  std::deque<Task>* q = nullptr;
  std::deque<Task>::iterator next;
  uint64_t limit = max_bytes_;
  if (!now_.empty()) {
    q = &now_;
    next = now_.begin();
  } else if (!later_.empty() && running_later_ < kMaxLaterFetches && !app_waits) {
    q = &later_;
    next = NextLaterLocked();
    limit = max_bytes_ / 2;
  }
  // In order: a task that does not fit waits for room rather than being overtaken.
  if (q == nullptr || (used != 0 && used + next->bytes > limit)) {
    return false;
  }
  out = std::move(*next);
  q->erase(next);
  ++running_fetches_;
  running_later_ += out.kind == Kind::kLater ? 1 : 0;
  starting_bytes_ += out.bytes;
  return true;
}

std::deque<Prefetcher::Task>::iterator Prefetcher::NextLaterLocked() {
  // A scan: the queue holds a few windows' groups (tens of tasks).
  auto best = later_.begin();
  for (auto it = std::next(best); it != later_.end(); ++it) {
    if (it->order < best->order) {
      best = it;
    }
  }
  return best;
}

void Prefetcher::Run() {
  MutexLock lock(mu_);
  for (;;) {
    Task task;
    while (!stop_ && !TakeLocked(task)) {
      cv_.Wait(mu_);
    }
    if (stop_) {
      return;
    }
    lock.Unlock();
    cv_.NotifyOne();  // another task may be allowed too
    task.run();
    task.run = nullptr;  // what it captured goes before the lock is taken again
    lock.Lock();
    if (task.kind == Kind::kLoad) {
      --running_loads_;
    } else {
      --running_fetches_;
      running_later_ -= task.kind == Kind::kLater ? 1 : 0;
      starting_bytes_ -= task.bytes;
    }
    cv_.NotifyOne();
  }
}

}  // namespace ferry::readahead
