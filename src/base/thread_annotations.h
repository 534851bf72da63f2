// Clang thread-safety annotations (-Wthread-safety): which mutex guards which member, which
// functions take, release or need a lock. The analysis runs in CI (`make tidy-ci`, clang); under
// g++ the macros expand to nothing. Use them with base/mutex.h, whose types carry the
// capability attributes (libstdc++'s std::mutex does not).
//
//   class Queue {
//     void Push(int v) FERRY_EXCLUDES(mu_);
//     void PopLocked() FERRY_REQUIRES(mu_);
//     Mutex mu_;
//     std::deque<int> items_ FERRY_GUARDED_BY(mu_);
//   };
#pragma once

#if defined(__clang__)
#define FERRY_TSA_(x) __attribute__((x))
#else
#define FERRY_TSA_(x)
#endif

#define FERRY_CAPABILITY(name) FERRY_TSA_(capability(name))
#define FERRY_SCOPED_CAPABILITY FERRY_TSA_(scoped_lockable)
// The member may only be read or written with the mutex held.
#define FERRY_GUARDED_BY(mu) FERRY_TSA_(guarded_by(mu))
// What the pointer points to may only be touched with the mutex held.
#define FERRY_PT_GUARDED_BY(mu) FERRY_TSA_(pt_guarded_by(mu))
// The caller must hold the mutex (exclusively / at least shared).
#define FERRY_REQUIRES(...) FERRY_TSA_(requires_capability(__VA_ARGS__))
#define FERRY_REQUIRES_SHARED(...) FERRY_TSA_(requires_shared_capability(__VA_ARGS__))
// The caller must not hold the mutex (the function takes it).
#define FERRY_EXCLUDES(...) FERRY_TSA_(locks_excluded(__VA_ARGS__))
#define FERRY_ACQUIRE(...) FERRY_TSA_(acquire_capability(__VA_ARGS__))
#define FERRY_ACQUIRE_SHARED(...) FERRY_TSA_(acquire_shared_capability(__VA_ARGS__))
#define FERRY_RELEASE(...) FERRY_TSA_(release_capability(__VA_ARGS__))
#define FERRY_RELEASE_SHARED(...) FERRY_TSA_(release_shared_capability(__VA_ARGS__))
#define FERRY_RELEASE_GENERIC(...) FERRY_TSA_(release_generic_capability(__VA_ARGS__))
// The function takes the mutex when it returns `result` (true, or a non-null pointer).
#define FERRY_TRY_ACQUIRE(...) FERRY_TSA_(try_acquire_capability(__VA_ARGS__))
// The function returns a reference to this mutex (accessors such as Entry::mu()).
#define FERRY_RETURN_CAPABILITY(mu) FERRY_TSA_(lock_returned(mu))
// Tells the analysis the mutex is held here (a lock taken where it cannot see, e.g. a callback).
#define FERRY_ASSERT_CAPABILITY(mu) FERRY_TSA_(assert_capability(mu))
// Opts one function out, for locking the analysis cannot follow; say why beside it.
#define FERRY_NO_THREAD_SAFETY_ANALYSIS FERRY_TSA_(no_thread_safety_analysis)
