// `ferry proxy metrics`: a live proxy's counters in the Prometheus text exposition format
// (version 0.0.4), for node_exporter's textfile collector or any scraper that reads a file.
// Sources, all in the cache directory: DIR/stats (the cache counters every process merges),
// DIR/proxy-status.json (the proxy's live counters, rewritten while they change),
// DIR/proxy-supervisor.json (restarts of a crashed xrootd, refused peers), the entries'
// disk usage and the file system's free space. Nothing is asked of the running server.
// With several cache disks (proxy-status.json "disks"), the cache counters, entries, usage and
// free space are summed over the disks in service, and each disk gets labelled samples
// (ferry_proxy_disk_up{dir="..."} and its faults, open files, free space).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"
#include "cache/stats.h"

namespace ferry::cli {

struct MetricsInput {
  cache::CounterValues counters{};
  uint64_t entries = 0;
  uint64_t disk_bytes = 0;
  uint64_t free_bytes = 0;
  // The numeric fields of proxy-status.json (empty when the proxy has not written it).
  std::map<std::string, double, std::less<>> status;
  bool proxy_up = false;  // the process that wrote the status is alive
  // The numeric fields of proxy-supervisor.json (`ferry proxy run`'s restarts and refusals).
  std::map<std::string, double, std::less<>> supervisor;
  // proxy-status.json's "origins": each origin's gate (plugin/proxy/origin_gate.h), by host:port.
  std::map<std::string, std::map<std::string, double, std::less<>>> origins;
  // proxy-status.json's "disks": each cache disk's state (plugin/proxy/disk_set.h), by dir.
  std::map<std::string, std::map<std::string, double, std::less<>>> disks;
};

// The numeric top-level fields of a flat JSON object ({"a":1,"b":"x","c":2.5} -> a, c).
std::map<std::string, double, std::less<>> NumericFields(std::string_view json);
// The objects of the status file's array `array` ("origins", "disks"), by their string field
// `name` ("origin", "dir"), each with its numeric fields. Strings may hold any character.
std::map<std::string, std::map<std::string, double, std::less<>>> ArrayObjects(
    std::string_view json, std::string_view array, std::string_view name);
inline std::map<std::string, std::map<std::string, double, std::less<>>> OriginFields(
    std::string_view json) {
  return ArrayObjects(json, "origins", "origin");
}

// One "# HELP", one "# TYPE" and one sample line per metric, every name prefixed ferry_.
std::string PrometheusText(const MetricsInput& in);

// PrometheusText of the cache directory `dir` now. Errors: not a ferry cache, an unreadable or
// corrupt DIR/stats.
Result<std::string> ProxyMetricsText(const std::string& dir);

}  // namespace ferry::cli
