// The cache directory's activity mark: DIR/.active, whose modification time says when a process
// last read through the cache. A background replica build (replica_build.h) waits while it is
// fresh, so that it never competes with a running analysis for the cores: its SCHED_IDLE class
// alone left a pass 7-13% slower on a 2-core machine (a busy sibling core, a shared cache).
//
// Writers: every read of a CachedFile calls ActivityMark::Touch; at most one touch per
// kTouchEveryNs reaches the file system (an open and a futimens), the rest is one atomic load.
// Readers: WaitForQuiet, called by a background build before each file and between baskets.
// Thread-safety: Touch from any thread; WaitForQuiet blocks its caller only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace ferry::cache {

inline constexpr const char* kActivityFile = ".active";

class ActivityMark {
 public:
  static constexpr int64_t kTouchEveryNs = 100'000'000;

  explicit ActivityMark(const std::string& dir) : path_(dir + "/" + kActivityFile) {}
  // `now_ns`: the caller's clock (steady or injected); only its differences matter.
  void Touch(int64_t now_ns);

 private:
  const std::string path_;
  std::atomic<int64_t> last_ns_{INT64_MIN / 2};
};

// Blocks while DIR/.active was modified within `quiet` of the wall clock, looking again every
// `poll`; returns at once when the mark is older or absent, or when `give_up` (if set) says
// true at one of the looks. Returns the time it waited.
std::chrono::milliseconds WaitForQuiet(const std::string& dir,
                                       std::chrono::milliseconds quiet,
                                       std::chrono::milliseconds poll,
                                       const std::function<bool()>& give_up = {});

}  // namespace ferry::cache
