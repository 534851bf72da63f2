// The report of `ferry cache doctor` and `ferry proxy doctor`: one line per check that says OK
// or what is wrong and the command that fixes it, or one JSON document (--json).
//
// JSON (stable; docs/doctor.md): {"command": "cache doctor", "format": 1, "ok": BOOL,
// "checks": [{"name": NAME, "status": "ok"|"warn"|"fail"|"skip", "message": TEXT, "fix": TEXT,
// "values": {KEY: NUMBER|TEXT, ...}}, ...]}. Names and value keys are only ever added to, never
// renamed; "fix" is "" when there is nothing to do.
//
// Exit status: 0 when no check failed (warnings allowed), 1 when one did. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ferry::cli {

enum class CheckStatus : uint8_t { kOk, kWarn, kFail, kSkip };

// What a checking child process (a dlopen probe, an xrdfs login) said and how it ended.
struct ChildOutput {
  bool finished = false;  // it closed its output within the time; else it was killed
  int status = 0;         // waitpid's status when finished
  std::string out;        // at most `cap` bytes of what it wrote
};

// Reads what child `pid` writes on `fd` (the read end of its pipe, closed here) until it
// closes it or `timeout_ms` pass, then reaps it, killing it first when it did not finish.
ChildOutput CollectChild(int pid, int fd, int timeout_ms, size_t cap);

struct Check {
  std::string name;  // "conf", "plugin", "dir", ...: stable keys of the JSON
  CheckStatus status = CheckStatus::kOk;
  std::string message;
  std::string fix;  // a command or an action; "" when nothing is to be done
  std::vector<std::pair<std::string, std::variant<double, std::string>>> values;

  Check& Value(std::string key, double v) {
    values.emplace_back(std::move(key), v);
    return *this;
  }
  Check& Text(std::string key, std::string v) {
    values.emplace_back(std::move(key), std::move(v));
    return *this;
  }
};

class DoctorReport {
 public:
  explicit DoctorReport(std::string command) : command_(std::move(command)) {}

  Check& Add(std::string name, CheckStatus status, std::string message, std::string fix = {});
  bool failed() const;
  // Prints the lines (or the JSON document) on stdout; returns the exit status above.
  int Print(bool json) const;

 private:
  std::string command_;
  std::vector<Check> checks_;
};

const char* CheckStatusName(CheckStatus s);

// The free space and inodes of the file system holding `dir` against the limits a cache is
// configured with (`max_bytes` its size cap, `min_free_bytes` the floor it keeps free): adds
// the check "space" (fail when the floor is not met: the cache would admit nothing) and
// "inodes" (fail when none is left, warn below 1000).
void CheckDiskSpace(DoctorReport& report,
                    const std::string& dir,
                    uint64_t max_bytes,
                    uint64_t min_free_bytes,
                    std::string_view fix_prefix);

// "0700".
std::string OctalMode(uint32_t mode);

}  // namespace ferry::cli
