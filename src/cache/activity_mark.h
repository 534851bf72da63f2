// The cache directory's activity marks: DIR/.active, whose modification time says when a process
// last read through the cache, and DIR/.filling, when a read last had to fetch from the origin.
// The cache only writes them; other processes read their age (the replica builder waits while a
// pass runs: replica/activity.h).
//
// Every read of a CachedFile touches .active, every read that missed touches .filling
// (ActivityMark::Touch); at most one touch per kTouchEveryNs reaches the file system (an open
// and a futimens), the rest is one atomic load.
// Thread-safety: Touch from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace ferry::cache {

inline constexpr const char* kActivityFile = ".active";
inline constexpr const char* kFillingFile = ".filling";

class ActivityMark {
 public:
  static constexpr int64_t kTouchEveryNs = 100'000'000;

  explicit ActivityMark(const std::string& dir, const char* file = kActivityFile)
      : path_(dir + "/" + file) {}
  // `now_ns`: the caller's clock (steady or injected); only its differences matter.
  void Touch(int64_t now_ns);

 private:
  const std::string path_;
  std::atomic<int64_t> last_ns_{INT64_MIN / 2};
};

}  // namespace ferry::cache
