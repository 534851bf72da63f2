// Mutexes the thread-safety analysis understands (base/thread_annotations.h): thin wrappers of
// std::mutex / std::shared_mutex with capability attributes, their scoped locks, and a
// condition variable that waits on them. They cost what the std types cost.
//
// Waiting: CondVar has no predicate overloads on purpose. A predicate lambda is analysed as a
// separate function that does not hold the lock, so guarded reads inside it would be flagged;
// the loop is written at the call site instead, where the analysis sees the lock held:
//
//   MutexLock lock(mu_);
//   while (!done_) cv_.Wait(mu_);
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "base/thread_annotations.h"

namespace ferry {

class FERRY_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  ~Mutex() = default;

  void Lock() FERRY_ACQUIRE() { mu_.lock(); }
  void Unlock() FERRY_RELEASE() { mu_.unlock(); }
  bool TryLock() FERRY_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds it (no run-time check).
  void AssertHeld() const FERRY_ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope; Unlock()/Lock() drop and retake it inside the scope.
class FERRY_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) FERRY_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() FERRY_RELEASE() {
    if (held_) {
      mu_.Unlock();
    }
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() FERRY_RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() FERRY_ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

class FERRY_CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;
  ~SharedMutex() = default;

  void Lock() FERRY_ACQUIRE() { mu_.lock(); }
  void Unlock() FERRY_RELEASE() { mu_.unlock(); }
  void LockShared() FERRY_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() FERRY_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively for its scope.
class FERRY_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) FERRY_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~WriterLock() FERRY_RELEASE() { mu_.Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex shared for its scope.
class FERRY_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) FERRY_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~ReaderLock() FERRY_RELEASE() {
    if (held_) {
      mu_.UnlockShared();
    }
  }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

  // Drops it before the end of the scope (an error path that must not hold it).
  void Unlock() FERRY_RELEASE() {
    mu_.UnlockShared();
    held_ = false;
  }

 private:
  SharedMutex& mu_;
  bool held_ = true;
};

// A condition variable over Mutex. Each wait returns with the mutex held; spurious wake-ups
// happen, so callers loop on their condition.
class CondVar {
 public:
  void Wait(Mutex& mu) FERRY_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // the caller's MutexLock still owns it
  }
  // False when `deadline` passed.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex& mu, std::chrono::time_point<Clock, Duration> deadline) FERRY_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool woke = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woke;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace ferry
