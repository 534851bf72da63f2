#include "plugin/proxy/access_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include "base/fd.h"
#include "base/json_writer.h"
#include "base/mutex.h"
#include "cache/dir_access.h"

namespace ferry::proxy {
namespace {

// A minimal reader for the flat objects AccessRecordJson writes: string and number values.
class FlatJson {
 public:
  explicit FlatJson(std::string_view s) : s_(s) {}

  // Calls on_field(key, string_value, number_value, is_string) per field; false on bad input.
  template <class OnField>
  bool Parse(OnField on_field) {
    Skip();
    if (!Eat('{')) {
      return false;
    }
    Skip();
    if (Eat('}')) {
      return AtEnd();
    }
    for (;;) {
      std::string key;
      Skip();
      if (!String(key)) {
        return false;
      }
      Skip();
      if (!Eat(':')) {
        return false;
      }
      Skip();
      std::string text;
      double number = 0;
      const bool is_string = pos_ < s_.size() && s_[pos_] == '"';
      if (is_string ? !String(text) : !Number(number)) {
        return false;
      }
      on_field(key, text, number, is_string);
      Skip();
      if (Eat('}')) {
        return AtEnd();
      }
      if (!Eat(',')) {
        return false;
      }
    }
  }

 private:
  void Skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    Skip();
    return pos_ == s_.size();
  }
  bool String(std::string& out) {
    if (!Eat('"')) {
      return false;
    }
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') {
        return true;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) {
        return false;
      }
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          // The writer escapes only control characters this way (one byte each).
          if (pos_ + 4 > s_.size()) {
            return false;
          }
          unsigned v = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[pos_++];
            v <<= 4;
            if (h >= '0' && h <= '9') {
              v |= static_cast<unsigned>(h - '0');
            } else if (h >= 'a' && h <= 'f') {
              v |= static_cast<unsigned>(h - 'a' + 10);
            } else if (h >= 'A' && h <= 'F') {
              v |= static_cast<unsigned>(h - 'A' + 10);
            } else {
              return false;
            }
          }
          if (v > 0x7F) {
            return false;
          }
          out += static_cast<char>(v);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool Number(double& out) {
    const size_t start = pos_;
    while (pos_ < s_.size()
           && (std::isdigit(static_cast<unsigned char>(s_[pos_])) != 0 || s_[pos_] == '-'
               || s_[pos_] == '+' || s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
    }
    if (pos_ == start || pos_ - start > 40) {
      return false;
    }
    char buf[48];
    const std::string_view num = s_.substr(start, pos_ - start);
    num.copy(buf, num.size());
    buf[num.size()] = '\0';
    char* end = nullptr;
    out = std::strtod(buf, &end);
    // The writer writes finite numbers only ("1e999" would read as infinity).
    return end == buf + num.size() && std::isfinite(out);
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::string LogPath(const std::string& dir) {
  return dir + "/" + kAccessLogName;
}

// Serialises rotations of this process; another process rotating at the same moment at worst
// drops one of the two old logs, never a record being appended (appends go to an open file).
Mutex g_rotate_mu;

void RotateIfBig(const std::string& dir) {
  struct stat st {};
  const std::string path = LogPath(dir);
  if (::stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) < kAccessLogRotateBytes) {
    return;
  }
  MutexLock lock(g_rotate_mu);
  if (::stat(path.c_str(), &st) == 0
      && static_cast<uint64_t>(st.st_size) >= kAccessLogRotateBytes) {
    (void)::rename(path.c_str(), (path + ".1").c_str());
  }
}

void Add(AccessSummary& s, const AccessRecord& r) {
  s.records += 1;
  s.reads += r.reads;
  s.bytes_read += r.bytes_read;
  s.bytes_hit += r.bytes_hit;
  s.bytes_missed += r.bytes_missed;
  s.bytes_bypassed += r.bytes_bypassed;
  s.bytes_prefetched += r.bytes_prefetched;
  s.origin_bytes += r.origin_bytes;
  s.origin_requests += r.origin_requests;
  if (s.first_open_unix == 0 || (r.open_unix > 0 && r.open_unix < s.first_open_unix)) {
    s.first_open_unix = r.open_unix;
  }
  s.last_close_unix = std::max(s.last_close_unix, r.close_unix);
}

}  // namespace

std::string AccessRecordJson(const AccessRecord& r) {
  JsonWriter w;
  w.BeginObject().Field("path", r.path).Field("user", r.user).Field("size", r.size);
  w.Field("open_unix", r.open_unix).Field("close_unix", r.close_unix);
  w.Field("reads", r.reads).Field("bytes_read", r.bytes_read).Field("bytes_hit", r.bytes_hit);
  w.Field("bytes_missed", r.bytes_missed).Field("bytes_bypassed", r.bytes_bypassed);
  w.Field("bytes_prefetched", r.bytes_prefetched).Field("origin_bytes", r.origin_bytes);
  w.Field("origin_requests", r.origin_requests).EndObject();
  return w.Take();
}

Result<AccessRecord> ParseAccessRecord(std::string_view line) {
  AccessRecord r;
  bool has_path = false;
  bool in_range = true;
  // A count as the writer wrote it (an integer below 2^64); negative ones read as 0, as before.
  auto count = [&in_range](double v) {
    if (!(v < 18446744073709551616.0)) {  // 2^64: beyond it the conversion is undefined
      in_range = false;
      return uint64_t{0};
    }
    return v > 0 ? static_cast<uint64_t>(v) : uint64_t{0};
  };
  const bool ok = FlatJson(line).Parse(
      [&](const std::string& key, const std::string& text, double number, bool is_string) {
        if (is_string) {
          if (key == "path") {
            r.path = text;
            has_path = true;
          } else if (key == "user") {
            r.user = text;
          }
          return;
        }
        if (key == "size") {
          r.size = count(number);
        } else if (key == "open_unix") {
          r.open_unix = number;
        } else if (key == "close_unix") {
          r.close_unix = number;
        } else if (key == "reads") {
          r.reads = count(number);
        } else if (key == "bytes_read") {
          r.bytes_read = count(number);
        } else if (key == "bytes_hit") {
          r.bytes_hit = count(number);
        } else if (key == "bytes_missed") {
          r.bytes_missed = count(number);
        } else if (key == "bytes_bypassed") {
          r.bytes_bypassed = count(number);
        } else if (key == "bytes_prefetched") {
          r.bytes_prefetched = count(number);
        } else if (key == "origin_bytes") {
          r.origin_bytes = count(number);
        } else if (key == "origin_requests") {
          r.origin_requests = count(number);
        }
      });
  if (!ok || !has_path || !in_range) {
    return CorruptionError("not an access record");
  }
  return r;
}

Status AppendAccessRecord(const std::string& cache_dir, const AccessRecord& r) {
  RotateIfBig(cache_dir);
  std::string line = AccessRecordJson(r);
  line += '\n';
  const std::string path = LogPath(cache_dir);
  Fd fd = FERRY_TRY(cache::OpenCacheFile(path, O_WRONLY | O_APPEND));
  // One write: O_APPEND makes it land whole at the end, whoever else appends.
  const ssize_t n = ::write(fd.get(), line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    return IoError("cannot append to " + path, n < 0 ? errno : ENOSPC);
  }
  return OkStatus();
}

Result<AccessSummary> SummariseAccessLog(const std::string& cache_dir) {
  AccessSummary s;
  std::set<std::string> paths;
  for (const std::string& path : {LogPath(cache_dir) + ".1", LogPath(cache_dir)}) {
    std::ifstream in(path);
    if (!in) {
      continue;
    }
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) {
        continue;
      }
      auto r = ParseAccessRecord(line);
      if (!r) {
        s.bad_lines += 1;
        continue;
      }
      Add(s, *r);
      paths.insert(r->path);
    }
  }
  s.files = paths.size();
  return s;
}

}  // namespace ferry::proxy
