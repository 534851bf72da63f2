// base/mutex.h: the wrappers lock, wait and time out as the std types they wrap. (What the
// annotations catch is checked by scripts/lint/thread_safety.py, not here.)
#include "base/mutex.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace ferry {
namespace {

// These tests probe the locks from outside the discipline the analysis enforces (TryLock on a
// held mutex, two shared holders in one scope): the bodies opt out of it.
void MutexLockUnlocksInItsScopeAndOnRequest() FERRY_NO_THREAD_SAFETY_ANALYSIS {
  Mutex mu;
  {
    MutexLock lock(mu);
    EXPECT_FALSE(mu.TryLock());
    lock.Unlock();
    ASSERT_TRUE(mu.TryLock());  // dropped inside the scope
    mu.Unlock();
    lock.Lock();
    EXPECT_FALSE(mu.TryLock());
  }
  ASSERT_TRUE(mu.TryLock());  // released at the end of the scope
  mu.Unlock();
}

TEST(Mutex, MutexLockUnlocksInItsScopeAndOnRequest) {
  MutexLockUnlocksInItsScopeAndOnRequest();
}

void ReaderLocksShareWriterLocksExclude() FERRY_NO_THREAD_SAFETY_ANALYSIS {
  SharedMutex mu;
  int value = 0;
  {
    ReaderLock a(mu);
    ReaderLock b(mu);  // would deadlock if shared locks excluded each other
    value = 1;
  }
  std::thread writer([&] {
    WriterLock w(mu);
    value = 2;
  });
  writer.join();
  ReaderLock r(mu);
  EXPECT_EQ(value, 2);
}

TEST(Mutex, ReaderLocksShareWriterLocksExclude) {
  ReaderLocksShareWriterLocksExclude();
}

TEST(Mutex, CondVarWakesAWaiterThatRechecksItsCondition) {
  Mutex mu;
  CondVar cv;
  bool ready = false;
  int seen = 0;
  std::thread waiter([&] {
    MutexLock lock(mu);
    while (!ready) {
      cv.Wait(mu);
    }
    seen = 1;
  });
  {
    MutexLock lock(mu);
    ready = true;
  }
  cv.NotifyAll();
  waiter.join();
  EXPECT_EQ(seen, 1);
}

TEST(Mutex, WaitUntilReturnsFalseAtTheDeadlineHoldingTheLock) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(mu);
  // A deadline already past: no notification can come, the wait times out at once.
  EXPECT_FALSE(cv.WaitUntil(mu, std::chrono::steady_clock::now() - std::chrono::seconds(1)));
  std::thread other([&] { EXPECT_FALSE(mu.TryLock()); });  // still held by this thread
  other.join();
}

}  // namespace
}  // namespace ferry
