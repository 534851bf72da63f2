// WaitForQuiet, CpuRoom and WaitForRoom: see activity.h.
#include "replica/activity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

namespace ferry::replica {
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
  const std::string path = dir + "/" + cache::kActivityFile;
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

bool MayBuild(int64_t active_age_ms,
              int64_t filling_age_ms,
              int64_t quiet_ms,
              double spare_cores,
              double min_spare) {
  if (active_age_ms < 0 || active_age_ms >= quiet_ms) {
    return true;
  }
  const bool filling = filling_age_ms >= 0 && filling_age_ms < quiet_ms;
  return filling && spare_cores >= min_spare;
}

bool FillingPassRunning(const std::string& dir, std::chrono::milliseconds quiet) {
  const int64_t active_age = MarkAgeMs(dir + "/" + cache::kActivityFile);
  const int64_t filling_age = MarkAgeMs(dir + "/" + cache::kFillingFile);
  return active_age >= 0 && active_age < quiet.count() && filling_age >= 0
         && filling_age < quiet.count();
}

bool MayBuildNow(const std::string& dir,
                 std::chrono::milliseconds quiet,
                 const std::function<double()>& spare_cores,
                 double min_spare,
                 std::string* why) {
  const int64_t active_age = MarkAgeMs(dir + "/" + cache::kActivityFile);
  const int64_t filling_age = MarkAgeMs(dir + "/" + cache::kFillingFile);
  const bool pass = active_age >= 0 && active_age < quiet.count();
  const bool fill_pass = filling_age >= 0 && filling_age < quiet.count();
  const double spare = pass && fill_pass && spare_cores ? spare_cores() : 0.0;
  char text[128];
  if (!pass) {
    std::snprintf(text, sizeof text, "no pass running");
  } else if (fill_pass) {
    std::snprintf(text, sizeof text, "a filling pass left %.2f cores idle (%.2f needed)", spare,
                  min_spare);
  } else {
    std::snprintf(text, sizeof text, "a pass reads the cache without filling it");
  }
  *why = text;
  return MayBuild(active_age, filling_age, quiet.count(), spare, min_spare);
}

std::chrono::milliseconds WaitForRoom(const std::string& dir,
                                      std::chrono::milliseconds quiet,
                                      std::chrono::milliseconds poll,
                                      const std::function<double()>& spare_cores,
                                      double min_spare,
                                      const std::function<bool()>& give_up) {
  const std::string active = dir + "/" + cache::kActivityFile;
  const std::string filling = dir + "/" + cache::kFillingFile;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const int64_t active_age = MarkAgeMs(active);
    const int64_t filling_age = MarkAgeMs(filling);
    const bool fill_pass = filling_age >= 0 && filling_age < quiet.count();
    const double spare = fill_pass && spare_cores ? spare_cores() : 0.0;
    if (MayBuild(active_age, filling_age, quiet.count(), spare, min_spare)
        || (give_up && give_up())) {
      break;
    }
    std::this_thread::sleep_for(poll);
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now()
                                                               - start);
}

CpuRoom::Sample CpuRoom::Take() {
  Sample s;
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  s.wall_ns = ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  s.own_ns = ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
  // The first line of /proc/stat: every core's time in clock ticks, by state.
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, sys = 0, idle = 0, iowait = 0, irq = 0, soft = 0, steal = 0;
  if (stat >> cpu >> user >> nice >> sys >> idle >> iowait >> irq >> soft >> steal
      && cpu == "cpu") {
    const long hz = ::sysconf(_SC_CLK_TCK);
    const auto ticks = static_cast<int64_t>(user + nice + sys + irq + soft + steal);
    s.busy_ns = hz > 0 ? ticks * (1'000'000'000LL / hz) : 0;
  }
  return s;
}

double CpuRoom::SpareCores() {
  MutexLock lock(mu_);
  if (last_.wall_ns == 0) {
    last_ = Take();
    std::this_thread::sleep_for(std::chrono::milliseconds(kWindowMs));
  }
  Sample now = Take();
  const int64_t wall = now.wall_ns - last_.wall_ns;
  if (wall < kWindowMs * 1'000'000) {
    return spare_;
  }
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const int64_t others = (now.busy_ns - last_.busy_ns) - (now.own_ns - last_.own_ns);
  spare_ = static_cast<double>(cores > 0 ? cores : 1)
           - static_cast<double>(std::max<int64_t>(others, 0)) / static_cast<double>(wall);
  last_ = now;
  return spare_;
}

}  // namespace ferry::replica
