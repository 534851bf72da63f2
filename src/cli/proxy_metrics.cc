#include "cli/proxy_metrics.h"

#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>

#include "cache/capacity.h"
#include "cache/entry_store.h"

namespace ferry::cli {
namespace {

struct StatusMetric {
  std::string_view field;  // in proxy-status.json
  std::string_view name;
  std::string_view type;
  std::string_view help;
};

// The proxy's own counters restart from zero with the process; Prometheus treats a counter
// that goes down as a reset.
constexpr StatusMetric kStatusMetrics[] = {
    {"open_files", "ferry_proxy_open_files", "gauge", "Files open in the proxy."},
    {"opens", "ferry_proxy_opens_total", "counter", "Opens served."},
    {"redirects", "ferry_proxy_redirects_total", "counter",
     "Opens redirected to the proxy itself (one connection per open)."},
    {"origin_requests", "ferry_proxy_origin_requests_total", "counter",
     "Requests sent to the origin."},
    {"origin_inflight", "ferry_proxy_origin_requests_outstanding", "gauge",
     "Origin requests in flight when the status was written."},
    {"origin_max_inflight", "ferry_proxy_origin_requests_outstanding_max", "gauge",
     "Most origin requests in flight at once."},
    {"origin_inflight_seconds", "ferry_proxy_origin_inflight_seconds_total", "counter",
     "Origin requests in flight integrated over time: its rate is the mean number outstanding."},
    {"origin_busy_seconds", "ferry_proxy_origin_busy_seconds_total", "counter",
     "Time with at least one origin request in flight."},
    {"prefetched_bytes", "ferry_proxy_prefetched_bytes_total", "counter",
     "Bytes fetched ahead of the clients' reads."},
    {"prefetch_requests", "ferry_proxy_prefetch_requests_total", "counter", "Read-ahead fetches."},
    {"origin_opens", "ferry_proxy_origin_opens_total", "counter",
     "Files opened at the origin (a reused origin handle opens none)."},
    {"origin_handles_reused", "ferry_proxy_origin_handles_reused_total", "counter",
     "Opens served by an origin handle an earlier open of the same file left open."},
    {"origin_handles_idle", "ferry_proxy_origin_handles_idle", "gauge",
     "Origin handles kept open for the next open of their file."},
    {"copies_detected", "ferry_proxy_copies_detected_total", "counter",
     "Handles recognised as whole-file copies (served through, cached up to "
     "copy_cache_fraction)."},
    {"copy_bytes_through", "ferry_proxy_copy_bytes_through_total", "counter",
     "Bytes served to copies from the origin without caching them."},
    {"copy_memory_bytes", "ferry_proxy_copy_memory_bytes", "gauge",
     "Memory held by copies served through (blocks read ahead, being read, kept)."},
    {"copy_memory_peak_bytes", "ferry_proxy_copy_memory_peak_bytes", "gauge",
     "Most memory held by copies at once since the start (at most copy_memory)."},
    {"copy_memory_limit_bytes", "ferry_proxy_copy_memory_limit_bytes", "gauge",
     "The memory all copies may hold at once (copy_memory)."},
    {"copy_memory_refused", "ferry_proxy_copy_memory_refused_total", "counter",
     "Blocks copies did without for want of memory: not read ahead, not kept, or read "
     "straight into the client's buffer."},
    {"records_failed", "ferry_proxy_access_records_failed_total", "counter",
     "Access records that could not be appended."},
    {"zero_copy_reads", "ferry_proxy_zero_copy_reads_total", "counter",
     "Reads sent from the cache's data file without a copy (sendfile)."},
    {"zero_copy_bytes", "ferry_proxy_zero_copy_bytes_total", "counter",
     "Bytes sent from the cache's data file without a copy (sendfile)."},
    {"zero_copy_declined", "ferry_proxy_zero_copy_declined_total", "counter",
     "Sendfile-sized reads served the normal way: not every byte held and verified."},
    {"disks_up", "ferry_proxy_disks_up", "gauge", "Cache disks in service."},
    {"started_unix", "ferry_proxy_start_time_seconds", "gauge", "When the proxy started."},
    {"updated_unix", "ferry_proxy_status_time_seconds", "gauge",
     "When the proxy last wrote its status (only while something changes)."},
};

// DIR/proxy-supervisor.json, written by `ferry proxy run` (cli/proxy_supervisor.h). Its counters
// live as long as the supervisor.
constexpr StatusMetric kSupervisorMetrics[] = {
    {"xrootd_restarts", "ferry_proxy_xrootd_restarts_total", "counter",
     "Times xrootd died of a signal and was started again."},
    {"last_crash_unix", "ferry_proxy_last_crash_time_seconds", "gauge",
     "When xrootd last died of a signal (0: never)."},
    {"last_crash_signal", "ferry_proxy_last_crash_signal", "gauge",
     "The signal xrootd last died of (11: SIGSEGV, 9: SIGKILL, 6: SIGABRT)."},
    {"entries_removed_after_crash", "ferry_proxy_entries_removed_after_crash_total", "counter",
     "Cache entries a crash left damaged, removed before the restart."},
    {"peers_refused", "ferry_proxy_peers_refused_total", "counter",
     "Peers refused for a while because crashes came from their requests."},
    {"peers_refused_now", "ferry_proxy_refused_peers", "gauge", "Peers refused now."},
    {"connections_refused", "ferry_proxy_connections_refused_total", "counter",
     "Connections from refused peers closed at accept (since the last restart)."},
};

void Metric(std::string& out,
            std::string_view name,
            std::string_view type,
            std::string_view help,
            double value) {
  char number[64];
  // Counters and sizes are integers: printed exactly, not as 1.2e+10.
  if (value == static_cast<double>(static_cast<long long>(value))) {
    std::snprintf(number, sizeof number, "%lld", static_cast<long long>(value));
  } else {
    std::snprintf(number, sizeof number, "%.17g", value);
  }
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  out.append(name).append(" ").append(number).append("\n");
}

// Per-origin gate counters of the status file's "origins" (one labelled sample per origin).
constexpr StatusMetric kOriginMetrics[] = {
    {"in_flight", "ferry_proxy_origin_gate_in_flight", "gauge",
     "Requests in flight to this origin (at most ferry.origin_inflight)."},
    {"waited", "ferry_proxy_origin_gate_waited_total", "counter",
     "Requests that found every slot of this origin taken and waited."},
    {"turned_away", "ferry_proxy_origin_gate_turned_away_total", "counter",
     "Requests failed after waiting ferry.origin_wait_ms for a slot of this origin."},
    {"unanswered", "ferry_proxy_origin_unanswered_total", "counter",
     "Requests this origin left unanswered for ferry.timeout (failed, not retried)."},
};

// Per-disk samples of the status file's "disks" (plugin/proxy/disk_set.h).
constexpr StatusMetric kDiskMetrics[] = {
    {"up", "ferry_proxy_disk_up", "gauge",
     "1 while this cache disk is in service, 0 once a fault took it out (I/O error, read-only, "
     "removed)."},
    {"faults", "ferry_proxy_disk_faults_total", "counter",
     "Disk faults seen on this cache disk (I/O errors, read-only file system, marker gone)."},
    {"outages", "ferry_proxy_disk_outages_total", "counter",
     "Times this cache disk was taken out of service."},
    {"open", "ferry_proxy_disk_open_files", "gauge", "Files open on this cache disk."},
    {"placed", "ferry_proxy_disk_entries_placed_total", "counter",
     "New cache entries placed on this disk."},
    {"free_bytes", "ferry_proxy_disk_free_bytes", "gauge",
     "Free space on this cache disk's file system (0 while out of service)."},
    {"free_inodes", "ferry_proxy_disk_free_inodes", "gauge",
     "Free inodes on this cache disk's file system (0 while out of service or not counted)."},
};

// A Prometheus label value: backslash, double quote and newline escaped.
std::string LabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// One labelled sample per object of `objects` for each metric (the header once).
void LabelledMetrics(
    std::string& out,
    std::span<const StatusMetric> metrics,
    std::string_view label,
    const std::map<std::string, std::map<std::string, double, std::less<>>>& objects) {
  for (const StatusMetric& m : metrics) {
    bool header = false;
    for (const auto& [name, fields] : objects) {
      auto it = fields.find(m.field);
      if (it == fields.end()) {
        continue;
      }
      if (!header) {
        out.append("# HELP ").append(m.name).append(" ").append(m.help).append("\n");
        out.append("# TYPE ").append(m.name).append(" ").append(m.type).append("\n");
        header = true;
      }
      out.append(m.name).append("{").append(label).append("=\"").append(LabelValue(name));
      out.append("\"} ").append(std::to_string(static_cast<long long>(it->second))).append("\n");
    }
  }
}

// The status file's process still runs (EPERM: it does, as another account).
bool Alive(double pid) {
  return pid >= 1 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

}  // namespace

std::map<std::string, double, std::less<>> NumericFields(std::string_view json) {
  std::map<std::string, double, std::less<>> out;
  size_t pos = json.find('{');
  while (pos != std::string_view::npos && pos < json.size()) {
    const size_t key_begin = json.find('"', pos);
    const size_t key_end =
        key_begin == std::string_view::npos ? key_begin : json.find('"', key_begin + 1);
    const size_t colon = key_end == std::string_view::npos ? key_end : json.find(':', key_end);
    if (colon == std::string_view::npos) {
      break;
    }
    const size_t value = json.find_first_not_of(" \t\r\n", colon + 1);
    if (value == std::string_view::npos) {
      break;
    }
    if (json[value] == '"') {
      // A string value: skip it, escaped quotes included.
      size_t close = value + 1;
      while (close < json.size() && json[close] != '"') {
        close += json[close] == '\\' ? size_t{2} : size_t{1};
      }
      pos = json.find(',', close);
      continue;
    }
    const size_t value_end = json.find_first_of(",}", value);
    const std::string text(json.substr(value, value_end - value));
    char* stop = nullptr;
    const double number = std::strtod(text.c_str(), &stop);
    if (stop != text.c_str()) {
      out[std::string(json.substr(key_begin + 1, key_end - key_begin - 1))] = number;
    }
    pos = value_end;
  }
  return out;
}

namespace {

// The end of the string whose opening quote is at `quote` (the closing quote), or npos.
size_t StringEnd(std::string_view json, size_t quote) {
  for (size_t i = quote + 1; i < json.size(); ++i) {
    if (json[i] == '\\') {
      ++i;
    } else if (json[i] == '"') {
      return i;
    }
  }
  return std::string_view::npos;
}

// The position of the first `c` at or after `pos` outside strings, or npos.
size_t FindOutsideStrings(std::string_view json, char c, size_t pos) {
  for (size_t i = pos; i < json.size(); ++i) {
    if (json[i] == c) {
      return i;
    }
    if (json[i] == '"') {
      i = StringEnd(json, i);
      if (i == std::string_view::npos) {
        break;
      }
    }
  }
  return std::string_view::npos;
}

// The value of string field `name` of a flat object (no escapes expected in it), or npos.
std::optional<std::string> StringField(std::string_view object, std::string_view name) {
  const std::string key = "\"" + std::string(name) + "\":\"";
  const size_t at = object.find(key);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  const size_t from = at + key.size();
  const size_t end = StringEnd(object, from - 1);
  if (end == std::string_view::npos) {
    return std::nullopt;
  }
  return std::string(object.substr(from, end - from));
}

}  // namespace

std::map<std::string, std::map<std::string, double, std::less<>>> ArrayObjects(
    std::string_view json, std::string_view array, std::string_view name) {
  std::map<std::string, std::map<std::string, double, std::less<>>> out;
  const size_t key = json.find("\"" + std::string(array) + "\"");
  const size_t open = key == std::string_view::npos ? key : json.find('[', key);
  const size_t close = open == std::string_view::npos ? open : FindOutsideStrings(json, ']', open);
  if (close == std::string_view::npos) {
    return out;
  }
  for (size_t pos = FindOutsideStrings(json, '{', open); pos < close;
       pos = FindOutsideStrings(json, '{', pos)) {
    const size_t end = FindOutsideStrings(json, '}', pos);
    if (end == std::string_view::npos) {
      break;
    }
    const std::string_view object = json.substr(pos, end - pos + 1);
    if (auto value = StringField(object, name)) {
      out[*value] = NumericFields(object);
    }
    pos = end;
  }
  return out;
}

std::string PrometheusText(const MetricsInput& in) {
  std::string out;
  for (size_t i = 0; i < cache::kCounterCount; ++i) {
    const auto c = static_cast<cache::Counter>(i);
    const std::string name = "ferry_cache_" + std::string(cache::CounterName(c)) + "_total";
    Metric(out, name, "counter",
           "Cache counter " + std::string(cache::CounterName(c))
               + " (docs/format/page-store.md), merged by every process of the cache directory.",
           static_cast<double>(in.counters[i]));
  }
  Metric(out, "ferry_cache_entries", "gauge", "Files in the cache.",
         static_cast<double>(in.entries));
  Metric(out, "ferry_cache_disk_bytes", "gauge", "Disk space the cache's entries take.",
         static_cast<double>(in.disk_bytes));
  Metric(out, "ferry_cache_free_bytes", "gauge", "Free space on the cache's file system.",
         static_cast<double>(in.free_bytes));
  Metric(out, "ferry_proxy_up", "gauge", "1 while the process that wrote the status runs.",
         in.proxy_up ? 1 : 0);
  for (const StatusMetric& m : kStatusMetrics) {
    if (auto it = in.status.find(m.field); it != in.status.end()) {
      Metric(out, m.name, m.type, m.help, it->second);
    }
  }
  for (const StatusMetric& m : kSupervisorMetrics) {
    if (auto it = in.supervisor.find(m.field); it != in.supervisor.end()) {
      Metric(out, m.name, m.type, m.help, it->second);
    }
  }
  LabelledMetrics(out, kOriginMetrics, "origin", in.origins);
  LabelledMetrics(out, kDiskMetrics, "dir", in.disks);
  return out;
}

// `a` and `b` name the same directory (however they are spelled).
bool SameDir(const std::string& a, const std::string& b) {
  struct stat sa = {};
  struct stat sb = {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev
         && sa.st_ino == sb.st_ino;
}

// Adds the counters, usage and free space of cache disk `dir` to `in`.
Status AddDisk(const std::string& dir, MetricsInput& in) {
  const cache::CounterValues counters = FERRY_TRY(cache::ReadStatsFile(dir));
  for (size_t i = 0; i < cache::kCounterCount; ++i) {
    in.counters[i] += counters[i];
  }
  const cache::Usage usage = FERRY_TRY(cache::MeasureUsage(dir));
  in.entries += usage.entries;
  in.disk_bytes += usage.disk_bytes;
  in.free_bytes += FERRY_TRY(cache::FreeBytes(dir));
  return OkStatus();
}

Result<std::string> ProxyMetricsText(const std::string& dir) {
  if (!cache::IsCacheDir(dir)) {
    return Error(ErrorCode::kNotFound, dir + " is not a ferry cache directory");
  }
  MetricsInput in;
  FERRY_TRY(AddDisk(dir, in));
  std::ifstream status(dir + "/proxy-status.json");
  std::stringstream text;
  text << status.rdbuf();
  in.status = NumericFields(text.str());
  in.origins = OriginFields(text.str());
  in.disks = ArrayObjects(text.str(), "disks", "dir");
  // The other disks in service (a disk out of service is not touched: its device may hang).
  for (const auto& [disk, fields] : in.disks) {
    auto up = fields.find("up");
    if (!SameDir(disk, dir) && up != fields.end() && up->second == 1 && cache::IsCacheDir(disk)) {
      (void)AddDisk(disk, in);
    }
  }
  auto pid = in.status.find("pid");
  in.proxy_up = pid != in.status.end() && Alive(pid->second);
  in.status.erase("pid");
  std::ifstream supervisor(dir + "/proxy-supervisor.json");
  std::stringstream supervisor_text;
  supervisor_text << supervisor.rdbuf();
  in.supervisor = NumericFields(supervisor_text.str());
  return PrometheusText(in);
}

}  // namespace ferry::cli
