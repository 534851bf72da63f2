// Access records: one JSON line per file a site proxy closed, appended to DIR/access.jsonl and
// summarised by `ferry cache stats`. Format: docs/format/page-store.md, "Access records".
//
//   {"path":"/store/f.root","user":"ferryc3","size":N,"open_unix":T,"close_unix":T,"reads":N,
//    "bytes_read":N,"bytes_hit":N,"bytes_missed":N,"bytes_bypassed":N,"bytes_prefetched":N,
//    "origin_bytes":N,"origin_requests":N}
//
// A record is appended with one write() on an O_APPEND descriptor, so records of concurrent
// writers (threads, processes) never interleave. The log is renamed to access.jsonl.1 (the one
// before is dropped) when it passes kAccessLogRotateBytes; the summary reads both. Lines that do
// not parse (a torn last line after a crash, a newer format) are counted and skipped.
// Thread-safety: the functions may be called concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace ferry::proxy {

inline constexpr const char* kAccessLogName = "access.jsonl";
inline constexpr uint64_t kAccessLogRotateBytes = 64ull << 20;

struct AccessRecord {
  std::string path;      // as clients named it, without CGI
  std::string user;      // login name of the client that opened it first
  uint64_t size = 0;     // file size
  double open_unix = 0;  // seconds since the epoch
  double close_unix = 0;
  uint64_t reads = 0;             // client requests: read, vector read, page read (segments)
  uint64_t bytes_read = 0;        // bytes clients received
  uint64_t bytes_hit = 0;         // of those, served from the cache
  uint64_t bytes_missed = 0;      // served after an origin fetch (cached for next time)
  uint64_t bytes_bypassed = 0;    // read through without caching (not admitted, cache fault)
  uint64_t bytes_prefetched = 0;  // fetched ahead of the clients' reads by the proxy
  uint64_t origin_bytes = 0;      // bytes fetched from the origin for this file (gaps included)
  uint64_t origin_requests = 0;   // requests sent to the origin for this file
};

// One line of JSON (no newline).
std::string AccessRecordJson(const AccessRecord& r);
// Parses a line written by AccessRecordJson (unknown keys ignored); kCorruption otherwise.
Result<AccessRecord> ParseAccessRecord(std::string_view line);

// Appends a record to DIR/access.jsonl (created 0644), rotating first when it is too big.
Status AppendAccessRecord(const std::string& cache_dir, const AccessRecord& r);

struct AccessSummary {
  uint64_t records = 0;
  uint64_t files = 0;  // distinct paths
  uint64_t bad_lines = 0;
  uint64_t reads = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_hit = 0;
  uint64_t bytes_missed = 0;
  uint64_t bytes_bypassed = 0;
  uint64_t bytes_prefetched = 0;
  uint64_t origin_bytes = 0;
  uint64_t origin_requests = 0;
  double first_open_unix = 0;  // 0 when there are no records
  double last_close_unix = 0;
};

// Reads DIR/access.jsonl.1 and DIR/access.jsonl; both missing is an empty summary.
Result<AccessSummary> SummariseAccessLog(const std::string& cache_dir);

}  // namespace ferry::proxy
