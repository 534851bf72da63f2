#include "readahead/bulk_detect.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace ferry::readahead {
namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool Listed(const std::string& name, const std::vector<std::string>& tools) {
  return !name.empty() && std::find(tools.begin(), tools.end(), name) != tools.end();
}

// "python3.11" -> true: the programs whose first non-option argument is the script they run.
bool IsInterpreter(const std::string& name) {
  for (const char* prefix : {"python", "perl", "bash", "sh", "ruby", "env"}) {
    const std::string p = prefix;
    if (name.compare(0, p.size(), p) == 0
        && name.find_first_not_of("0123456789.", p.size()) == std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool IsCopyTool(const std::string& exe,
                const std::vector<std::string>& argv,
                const std::vector<std::string>& tools) {
  if (Listed(BaseName(exe), tools) || (!argv.empty() && Listed(BaseName(argv[0]), tools))) {
    return true;
  }
  if (!IsInterpreter(BaseName(exe))) {
    return false;
  }
  // The script: the first argument that is not an option ("python3 -u /usr/bin/xrdcp-like").
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "-c" || argv[i] == "-m") {
      return false;  // inline code or a module: no script name to judge
    }
    if (!argv[i].empty() && argv[i][0] != '-') {
      return Listed(BaseName(argv[i]), tools);
    }
  }
  return false;
}

bool IsCopyTool(const std::vector<std::string>& tools) {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) {
    return false;
  }
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  size_t begin = 0;
  while (begin < raw.size()) {
    size_t end = raw.find('\0', begin);
    if (end == std::string::npos) {
      end = raw.size();
    }
    argv.push_back(raw.substr(begin, end - begin));
    begin = end + 1;
  }
  return IsCopyTool(std::string(exe, static_cast<size_t>(n)), argv, tools);
}

BulkDetector::BulkDetector(uint64_t size, uint32_t percent)
    : size_(size), threshold_(size / 100 * std::clamp<uint32_t>(percent, 1, 100)) {}

BulkDetector::BulkDetector(uint64_t size, Bytes threshold)
    : size_(size), threshold_(std::min(size, threshold.n)) {}

bool BulkDetector::Note(std::span<const io::ReadRequest> requests) {
  thread_local std::vector<fetch::Range> ranges;  // no allocation once warm
  ranges.clear();
  for (const io::ReadRequest& r : requests) {
    ranges.push_back({r.offset, r.dest.size()});
  }
  return Note(std::span<const fetch::Range>(ranges));
}

bool BulkDetector::Note(std::span<const fetch::Range> ranges) {
  MutexLock lock(mu_);
  if (bulk_ || given_up_ || size_ < kMinBytes) {
    return bulk_;
  }
  for (const fetch::Range& range : ranges) {
    if (range.length == 0) {
      continue;
    }
    ++reads_;
    bytes_ += range.length;
    if (range.offset <= front_) {
      front_ = std::max(front_, range.end());
    } else {
      auto at =
          std::lower_bound(aside_.begin(), aside_.end(), range.offset,
                           [](const fetch::Range& x, uint64_t off) { return x.offset < off; });
      aside_.insert(at, range);
    }
  }
  // Reads held aside that the prefix reaches now.
  size_t used = 0;
  while (used < aside_.size() && aside_[used].offset <= front_) {
    front_ = std::max(front_, aside_[used].end());
    ++used;
  }
  aside_.erase(aside_.begin(), aside_.begin() + static_cast<long>(used));
  if (aside_.size() > kMaxAside) {
    given_up_ = true;  // scattered reads: not a copy
    aside_.clear();
    aside_.shrink_to_fit();
    return false;
  }
  bulk_ = front_ >= threshold_ && bytes_ >= reads_ * kMinRead;
  return bulk_;
}

bool BulkDetector::bulk() const {
  MutexLock lock(mu_);
  return bulk_;
}

uint64_t BulkDetector::prefix() const {
  MutexLock lock(mu_);
  return front_;
}

}  // namespace ferry::readahead
