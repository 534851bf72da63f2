#include "cli/doctor_report.h"

#include <poll.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>

#include "base/error.h"
#include "base/json_writer.h"
#include "base/strings.h"
#include "cache/capacity.h"
#include "cache/entry_store.h"
#include "cli/args.h"

namespace ferry::cli {

const char* CheckStatusName(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkip:
      return "skip";
  }
  return "fail";
}

std::string OctalMode(uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777U);
  return buf;
}

Check& DoctorReport::Add(std::string name,
                         CheckStatus status,
                         std::string message,
                         std::string fix) {
  checks_.push_back(Check{std::move(name), status, std::move(message), std::move(fix), {}});
  return checks_.back();
}

bool DoctorReport::failed() const {
  for (const Check& c : checks_) {
    if (c.status == CheckStatus::kFail) {
      return true;
    }
  }
  return false;
}

int DoctorReport::Print(bool json) const {
  if (json) {
    JsonWriter w;
    w.BeginObject().Field("command", command_).Field("format", 1).Field("ok", !failed());
    w.Key("checks").BeginArray();
    for (const Check& c : checks_) {
      w.BeginObject().Field("name", c.name).Field("status", CheckStatusName(c.status));
      w.Field("message", c.message).Field("fix", c.fix).Key("values").BeginObject();
      for (const auto& [key, value] : c.values) {
        if (const double* d = std::get_if<double>(&value)) {
          w.Field(key, *d);
        } else {
          w.Field(key, std::get<std::string>(value));
        }
      }
      w.EndObject().EndObject();
    }
    w.EndArray().EndObject();
    std::printf("%s\n", w.str().c_str());
  } else {
    for (const Check& c : checks_) {
      const char* tag = c.status == CheckStatus::kOk     ? "OK  "
                        : c.status == CheckStatus::kWarn ? "WARN"
                        : c.status == CheckStatus::kSkip ? "SKIP"
                                                         : "FAIL";
      std::printf("%s %-8s %s\n", tag, c.name.c_str(), c.message.c_str());
      if (!c.fix.empty()) {
        std::printf("              fix: %s\n", c.fix.c_str());
      }
    }
    std::printf("%s: %s\n", command_.c_str(),
                failed() ? "something above stops it from working (exit 1)" : "all good");
  }
  return failed() ? kExitBadInput : kExitOk;
}

void CheckDiskSpace(DoctorReport& report,
                    const std::string& dir,
                    uint64_t max_bytes,
                    uint64_t min_free_bytes,
                    std::string_view fix_prefix) {
  struct statvfs vfs = {};
  if (::statvfs(dir.c_str(), &vfs) != 0) {
    report.Add("space", CheckStatus::kSkip, "cannot look at " + dir + ": " + ErrnoText(errno));
    return;
  }
  const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const uint64_t total_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  const cache::Usage usage =
      cache::IsCacheDir(dir) ? cache::MeasureUsage(dir).value_or(cache::Usage{}) : cache::Usage{};
  const std::string sizes = HumanBytes(static_cast<double>(free_bytes)) + " free of "
                            + HumanBytes(static_cast<double>(total_bytes)) + "; the cache holds "
                            + HumanBytes(static_cast<double>(usage.disk_bytes)) + " of its "
                            + HumanBytes(static_cast<double>(max_bytes)) + " cap, keeps "
                            + HumanBytes(static_cast<double>(min_free_bytes)) + " free";
  Check* c = nullptr;
  if (free_bytes < min_free_bytes) {
    // Below the floor the cache evicts what it can and admits nothing new: every read goes to
    // the origin.
    c = &report.Add("space", CheckStatus::kFail,
                    sizes + ": below the free-space floor, nothing new is cached",
                    "free space on that file system, or lower the floor: " + std::string(fix_prefix)
                        + "min_free=SIZE");
  } else if (max_bytes > total_bytes) {
    c = &report.Add("space", CheckStatus::kWarn, sizes + ": the cap is larger than the file system",
                    "lower the cap: " + std::string(fix_prefix) + "max_size=SIZE");
  } else {
    c = &report.Add("space", CheckStatus::kOk, sizes);
  }
  c->Value("free_bytes", static_cast<double>(free_bytes));
  c->Value("total_bytes", static_cast<double>(total_bytes));
  c->Value("cache_bytes", static_cast<double>(usage.disk_bytes));
  c->Value("max_bytes", static_cast<double>(max_bytes));
  c->Value("min_free_bytes", static_cast<double>(min_free_bytes));

  const uint64_t inodes_free = vfs.f_favail;
  const std::string inodes = std::to_string(inodes_free) + " inodes free of "
                             + std::to_string(static_cast<uint64_t>(vfs.f_files));
  // A file system without inode accounting (btrfs, some network file systems) reports 0 of 0.
  if (vfs.f_files != 0 && inodes_free == 0) {
    c = &report.Add("inodes", CheckStatus::kFail,
                    inodes + ": no file can be created, nothing new is cached",
                    "remove files on that file system, or 'ferry cache clear'");
  } else if (vfs.f_files != 0 && inodes_free < 1000) {
    c = &report.Add("inodes", CheckStatus::kWarn, inodes + ": each cached file takes 3 to 5",
                    "remove files on that file system");
  } else {
    c = &report.Add("inodes", CheckStatus::kOk, inodes);
  }
  c->Value("inodes_free", static_cast<double>(inodes_free));
  c->Value("inodes_total", static_cast<double>(vfs.f_files));
}

ChildOutput CollectChild(int pid, int fd, int timeout_ms, size_t cap) {
  using Clock = std::chrono::steady_clock;
  ChildOutput r;
  char buf[4096];
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  // Bounded by the deadline; the count only guards against a clock that does not move.
  for (int rounds = 0; rounds < 100000 && !r.finished && Clock::now() < deadline; ++rounds) {
    struct pollfd p = {fd, POLLIN, 0};
    if (::poll(&p, 1, 500) <= 0) {
      continue;
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    r.finished = n <= 0;  // the child closed its end: it has exited or is exiting
    if (n > 0 && r.out.size() < cap) {
      r.out.append(buf, std::min(static_cast<size_t>(n), cap - r.out.size()));
    }
  }
  ::close(fd);
  if (!r.finished) {
    ::kill(pid, SIGKILL);
  }
  (void)::waitpid(pid, &r.status, 0);
  return r;
}

}  // namespace ferry::cli
