// IdlePool<T>: recently closed origin handles of ferry's site proxy, kept open per URL for a
// short idle time so that the next open of the same file reuses one instead of opening the
// file at the origin again (a WAN round trip). XrdHttp opens and closes the file for every
// GET, so without it every cold GET paid an origin open before its read.
//
//   IdlePool<plugin::XrdOrigin> pool(256, 30000, [](auto h) { CloseOrigin(std::move(h)); });
//   auto h = pool.Take(url, now_ms);   // an idle handle of url, or null: open a new one
//   ...
//   pool.Put(url, std::move(h), now_ms);  // the file closed; the handle was not failing
//
// - At most one idle handle per URL (a Put replaces and closes an older one) and at most
//   `max_idle` in all (the least recently put is closed first).
// - A handle idle for `idle_ms` or longer is never handed out: Take closes it, and Sweep
//   (called periodically) closes every expired one. idle_ms == 0 turns reuse off: Put closes
//   at once and Take finds nothing.
// - After CloseAll (process exit) every idle handle is closed and later Puts close at once.
// - Handles are closed by the `close` function given at construction (asynchronously, in the
//   proxy), always outside the pool's lock.
// - The pool decides nothing about a handle's health or its file's freshness: the caller puts
//   back only handles without errors, and checks a taken one like a new one (XrdOrigin's
//   MarkReused: the cache's revalidating stat asks the origin again).
//
// Times are milliseconds of the caller's monotonic clock (tests pass their own).
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace ferry::proxy {

template <class T>
class IdlePool {
 public:
  using Handle = std::shared_ptr<T>;
  using Closer = std::function<void(Handle)>;

  IdlePool(size_t max_idle, int64_t idle_ms, Closer close)
      : max_idle_(max_idle), idle_ms_(idle_ms), close_(std::move(close)) {}
  ~IdlePool() = default;
  IdlePool(const IdlePool&) = delete;
  IdlePool& operator=(const IdlePool&) = delete;

  // The idle handle of `url` if it was put back less than idle_ms ago (it leaves the pool and
  // is counted as reused), else null (an expired one is closed).
  Handle Take(const std::string& url, int64_t now_ms) {
    Handle expired;
    {
      MutexLock lock(mu_);
      auto it = idle_.find(url);
      if (it == idle_.end()) {
        return nullptr;
      }
      Handle h = std::move(it->second.handle);
      const bool fresh = now_ms - it->second.put_ms < idle_ms_;
      order_.erase(it->second.order);
      idle_.erase(it);
      if (fresh) {
        ++reused_;
        return h;
      }
      ++expired_;
      expired = std::move(h);
    }
    close_(std::move(expired));
    return nullptr;
  }

  // Keeps `handle` of `url` idle from now_ms; closes the handle it replaces, and the oldest
  // when over max_idle.
  void Put(const std::string& url, Handle handle, int64_t now_ms) {
    std::vector<Handle> to_close;
    {
      MutexLock lock(mu_);
      if (closed_ || idle_ms_ <= 0 || max_idle_ == 0) {
        to_close.push_back(std::move(handle));
      } else {
        auto it = idle_.find(url);
        if (it != idle_.end()) {
          to_close.push_back(std::move(it->second.handle));
          order_.erase(it->second.order);
          idle_.erase(it);
        }
        order_.push_back(url);
        idle_.emplace(url, Idle{std::move(handle), now_ms, std::prev(order_.end())});
        while (idle_.size() > max_idle_) {
          to_close.push_back(PopOldestLocked());
        }
      }
    }
    for (Handle& h : to_close) {
      close_(std::move(h));
    }
  }

  // Closes every handle idle for idle_ms or longer; the number still idle.
  size_t Sweep(int64_t now_ms) {
    std::vector<Handle> to_close;
    size_t left = 0;
    {
      MutexLock lock(mu_);
      // order_ is in Put order, so the expired ones are at its front.
      while (!order_.empty() && now_ms - idle_.at(order_.front()).put_ms >= idle_ms_) {
        to_close.push_back(PopOldestLocked());
        ++expired_;
      }
      left = idle_.size();
    }
    for (Handle& h : to_close) {
      close_(std::move(h));
    }
    return left;
  }

  // Closes every idle handle; later Puts close theirs at once (process exit).
  void CloseAll() {
    std::vector<Handle> to_close;
    {
      MutexLock lock(mu_);
      closed_ = true;
      while (!order_.empty()) {
        to_close.push_back(PopOldestLocked());
      }
    }
    for (Handle& h : to_close) {
      close_(std::move(h));
    }
  }

  size_t idle() const {
    MutexLock lock(mu_);
    return idle_.size();
  }
  // Handles handed out again by Take.
  uint64_t reused() const {
    MutexLock lock(mu_);
    return reused_;
  }
  // Handles closed because they stayed idle for idle_ms.
  uint64_t expired() const {
    MutexLock lock(mu_);
    return expired_;
  }

 private:
  struct Idle {
    Handle handle;
    int64_t put_ms = 0;
    std::list<std::string>::iterator order;
  };

  Handle PopOldestLocked() FERRY_REQUIRES(mu_) {
    auto it = idle_.find(order_.front());
    Handle h = std::move(it->second.handle);
    idle_.erase(it);
    order_.pop_front();
    return h;
  }

  const size_t max_idle_;
  const int64_t idle_ms_;
  const Closer close_;
  mutable Mutex mu_;
  std::map<std::string, Idle> idle_ FERRY_GUARDED_BY(mu_);
  std::list<std::string> order_ FERRY_GUARDED_BY(mu_);  // URLs, least recently put first
  bool closed_ FERRY_GUARDED_BY(mu_) = false;
  uint64_t reused_ FERRY_GUARDED_BY(mu_) = 0;
  uint64_t expired_ FERRY_GUARDED_BY(mu_) = 0;
};

}  // namespace ferry::proxy
