// The cache directory's activity marks, read: DIR/.active, whose modification time says when a
// process last read through the cache, and DIR/.filling, when a read last had to fetch from the
// origin (the cache writes them: cache/activity_mark.h). A background replica build
// (replica_build.h) waits while a pass runs, so that it never
// competes with a running analysis for the cores: its SCHED_IDLE class alone left a warm pass
// 7-13% slower on a 2-core machine (a busy sibling core, a shared cache). A pass that fills the
// cache is another matter: it waits on the link and leaves cores idle, and a replica built then
// is ready when the pass ends. So WaitForRoom lets a build go on during a filling pass as long as
// the machine's other processes leave at least kMinSpareCores idle, measured over each window.
//
// Readers: WaitForRoom (or WaitForQuiet), called by a background build before each file and
// between baskets.
// Thread-safety: the waits block their caller only; a CpuRoom may be shared by threads (the
// drainer's builders: one measure for all).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "base/mutex.h"
#include "cache/activity_mark.h"

namespace ferry::replica {

// Blocks while DIR/.active was modified within `quiet` of the wall clock, looking again every
// `poll`; returns at once when the mark is older or absent, or when `give_up` (if set) says
// true at one of the looks. Returns the time it waited.
std::chrono::milliseconds WaitForQuiet(const std::string& dir,
                                       std::chrono::milliseconds quiet,
                                       std::chrono::milliseconds poll,
                                       const std::function<bool()>& give_up = {});

// The cores the machine's other processes left idle, from /proc/stat (every core's busy time)
// less this process's own CPU time, over windows of at least kWindowMs: a new window is measured
// when the last one is that old, else the last figure stands. The first call measures one
// window (it sleeps kWindowMs).
class CpuRoom {
 public:
  static constexpr int64_t kWindowMs = 50;
  double SpareCores();

 private:
  struct Sample {
    int64_t wall_ns = 0;
    int64_t busy_ns = 0;  // every core's non-idle time
    int64_t own_ns = 0;   // this process's CPU time
  };
  static Sample Take();
  Mutex mu_;
  Sample last_ FERRY_GUARDED_BY(mu_);
  double spare_ FERRY_GUARDED_BY(mu_) = 0;
};

// Whether a background build may run now: no pass is running (`active_age_ms` < 0: no mark, or at
// least `quiet_ms`), or the running pass is filling (`filling_age_ms` within `quiet_ms`) and the
// others leave `spare_cores` >= `min_spare` (default kMinSpareCores: a core and some margin).
inline constexpr double kMinSpareCores = 1.2;
bool MayBuild(int64_t active_age_ms,
              int64_t filling_age_ms,
              int64_t quiet_ms,
              double spare_cores,
              double min_spare = kMinSpareCores);

// Whether a pass that fills the cache is running now (both marks of `dir` younger than `quiet`).
bool FillingPassRunning(const std::string& dir, std::chrono::milliseconds quiet);

// MayBuild's rule applied once, now (the marks of `dir`, `spare_cores` asked only while a
// filling pass runs); `why` gets what was measured, for the build's report.
bool MayBuildNow(const std::string& dir,
                 std::chrono::milliseconds quiet,
                 const std::function<double()>& spare_cores,
                 double min_spare,
                 std::string* why);

// As WaitForQuiet, with MayBuild's rule: also returns while a filling pass leaves `min_spare`
// cores idle. `spare_cores` (CpuRoom::SpareCores) is asked only while a filling pass runs.
std::chrono::milliseconds WaitForRoom(const std::string& dir,
                                      std::chrono::milliseconds quiet,
                                      std::chrono::milliseconds poll,
                                      const std::function<double()>& spare_cores,
                                      double min_spare,
                                      const std::function<bool()>& give_up = {});

}  // namespace ferry::replica
