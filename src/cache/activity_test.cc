// The activity mark: touches reach the file system at most every kTouchEveryNs, and
// WaitForQuiet returns at once for an old or missing mark and waits while it is fresh.
#include "cache/activity.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <ctime>

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace ferry::cache {
namespace {

using std::chrono::milliseconds;

// The mark's modification time, in seconds of the wall clock (0 when absent).
time_t MarkTime(const testing::TempDir& dir) {
  struct stat st {};
  return ::stat(dir.File(kActivityFile).c_str(), &st) == 0 ? st.st_mtime : 0;
}

// Moves the mark an hour into the past.
void Age(const testing::TempDir& dir) {
  const timespec old[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dir.File(kActivityFile).c_str(), old, 0), 0);
}

TEST(ActivityMark, TouchesAtMostEveryInterval) {
  testing::TempDir dir;
  ActivityMark mark(dir.path());
  EXPECT_EQ(MarkTime(dir), 0);
  mark.Touch(0);
  ASSERT_GT(MarkTime(dir), 0);
  Age(dir);
  const time_t aged = MarkTime(dir);
  mark.Touch(ActivityMark::kTouchEveryNs - 1);  // too soon: no system call
  EXPECT_EQ(MarkTime(dir), aged);
  mark.Touch(ActivityMark::kTouchEveryNs);
  EXPECT_GT(MarkTime(dir), aged);
}

TEST(ActivityMark, WaitForQuietReturnsAtOnceForAnOldOrMissingMark) {
  testing::TempDir dir;
  EXPECT_LT(WaitForQuiet(dir.path(), milliseconds(60000), milliseconds(1)).count(), 1000);
  ActivityMark mark(dir.path());
  mark.Touch(0);
  Age(dir);
  EXPECT_LT(WaitForQuiet(dir.path(), milliseconds(60000), milliseconds(1)).count(), 1000);
}

TEST(ActivityMark, WaitForQuietWaitsWhileTheMarkIsFresh) {
  // Returns only once the mark is `quiet` old: a build resumes after the reads stopped.
  testing::TempDir dir;
  ActivityMark mark(dir.path());
  mark.Touch(0);
  constexpr int64_t kQuietMs = 150;
  WaitForQuiet(dir.path(), milliseconds(kQuietMs), milliseconds(5));
  struct stat st {};
  ASSERT_EQ(::stat(dir.File(kActivityFile).c_str(), &st), 0);
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const int64_t age_ms =
      (now.tv_sec - st.st_mtim.tv_sec) * 1000 + (now.tv_nsec - st.st_mtim.tv_nsec) / 1'000'000;
  EXPECT_GE(age_ms, kQuietMs);
}

TEST(ActivityMark, WaitForQuietStopsWaitingWhenAskedToGiveUp) {
  // A fresh mark that would hold it for a minute: it returns at the first look that gives up,
  // and keeps waiting at the looks before it.
  testing::TempDir dir;
  ActivityMark mark(dir.path());
  mark.Touch(0);
  int looks = 0;
  WaitForQuiet(dir.path(), milliseconds(60000), milliseconds(1), [&] { return ++looks == 3; });
  EXPECT_EQ(looks, 3);
}

}  // namespace
}  // namespace ferry::cache
