// The activity marks: touches reach the file system at most every kTouchEveryNs, and
// WaitForQuiet returns at once for an old or missing mark and waits while it is fresh;
// WaitForRoom also lets a build run beside a filling pass that leaves a core idle.
#include "replica/activity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace ferry::replica {
namespace {

using cache::ActivityMark;
using cache::kActivityFile;
using cache::kFillingFile;

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

TEST(ActivityMark, MayBuildBesideAFillingPassThatLeavesACoreIdle) {
  constexpr int64_t kQuiet = 300;
  EXPECT_TRUE(MayBuild(-1, -1, kQuiet, 0.0));      // no pass ever
  EXPECT_TRUE(MayBuild(kQuiet, 10, kQuiet, 0.0));  // the pass ended
  // A warm pass (no recent fill): wait, however idle the machine.
  EXPECT_FALSE(MayBuild(10, -1, kQuiet, 2.0));
  EXPECT_FALSE(MayBuild(10, kQuiet + 1, kQuiet, 2.0));
  // A filling pass: build while the others leave a core idle, not when they need it.
  EXPECT_TRUE(MayBuild(10, 20, kQuiet, kMinSpareCores));
  EXPECT_FALSE(MayBuild(10, 20, kQuiet, kMinSpareCores - 0.01));
}

TEST(ActivityMark, WaitForRoomAsksForCoresOnlyWhileAPassFills) {
  testing::TempDir dir;
  ActivityMark active(dir.path());
  active.Touch(0);
  int asked = 0;
  // A warm pass: CPU is never asked, the wait lasts until it gives up.
  int looks = 0;
  WaitForRoom(
      dir.path(), milliseconds(60000), milliseconds(1), [&] { return ++asked, 2.0; },
      kMinSpareCores, [&] { return ++looks == 3; });
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(looks, 3);
  // The pass fills: with a core idle it returns at the first look; without, it keeps waiting.
  ActivityMark filling(dir.path(), kFillingFile);
  filling.Touch(0);
  looks = 0;
  WaitForRoom(
      dir.path(), milliseconds(60000), milliseconds(1), [&] { return ++asked, 2.0; },
      kMinSpareCores, [&] { return ++looks == 3; });
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(looks, 0);
  looks = 0;
  WaitForRoom(
      dir.path(), milliseconds(60000), milliseconds(1), [&] { return ++asked, 0.5; },
      kMinSpareCores, [&] { return ++looks == 3; });
  EXPECT_EQ(looks, 3);
}

TEST(ActivityMark, CpuRoomLeavesThisProcessOutOfTheOthersCpu) {
  // This process spins through a whole window: its own CPU is not the others', so the room it
  // reports stays within [0, cores] and counts at most what the rest of the machine used.
  CpuRoom room;
  (void)room.SpareCores();
  const auto until = std::chrono::steady_clock::now() + milliseconds(2 * CpuRoom::kWindowMs);
  volatile uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < until) {
    spin = spin + 1;
  }
  const double spare = room.SpareCores();
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  EXPECT_GE(spare, -0.1);
  EXPECT_LE(spare, static_cast<double>(cores) + 0.1);
}

}  // namespace
}  // namespace ferry::replica
