// ActivityMark: see activity_mark.h.
#include "cache/activity_mark.h"

#include <fcntl.h>
#include <sys/stat.h>

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

}  // namespace ferry::cache
