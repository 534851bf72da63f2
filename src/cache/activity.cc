// ActivityMark and WaitForQuiet: see activity.h.
#include "cache/activity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <thread>

#include "cache/dir_access.h"

namespace ferry::cache {

void ActivityMark::Touch(int64_t now_ns) {
  int64_t last = last_ns_.load(std::memory_order_relaxed);
  if (now_ns - last < kTouchEveryNs
      || !last_ns_.compare_exchange_strong(last, now_ns, std::memory_order_relaxed)) {
    return;  // touched recently, or another thread is touching it now
  }
  // Best effort: a cache directory that refuses the file only loses the build's courtesy.
  if (auto fd = OpenCacheFile(path_, O_WRONLY)) {
    (void)::futimens(fd->get(), nullptr);
  }
}

namespace {

// Milliseconds since DIR/.active was modified, by the wall clock (another process wrote it);
// -1 when it does not exist.
int64_t MarkAgeMs(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return -1;
  }
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const int64_t ns = (static_cast<int64_t>(now.tv_sec) - st.st_mtim.tv_sec) * 1'000'000'000
                     + (now.tv_nsec - st.st_mtim.tv_nsec);
  return ns / 1'000'000;
}

}  // namespace

std::chrono::milliseconds WaitForQuiet(const std::string& dir,
                                       std::chrono::milliseconds quiet,
                                       std::chrono::milliseconds poll,
                                       const std::function<bool()>& give_up) {
  const std::string path = dir + "/" + kActivityFile;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const int64_t age = MarkAgeMs(path);
    if (age < 0 || age >= quiet.count() || (give_up && give_up())) {
      break;
    }
    std::this_thread::sleep_for(poll);
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now()
                                                               - start);
}

}  // namespace ferry::cache
