// The site proxy's part of `ferry cache stats`: the summary of the per-file access records
// (DIR/access.jsonl) and the proxy's status file (DIR/proxy-status.json), when present.
#pragma once

#include <string>

#include "base/json_writer.h"

namespace ferry::cli {

// Adds "access": {...} and "proxy": {...} fields (only those whose files exist).
void WriteProxyStatsJson(JsonWriter& w, const std::string& cache_dir);
// Prints "access:" and "proxy:" lines (only those whose files exist).
void PrintProxyStats(const std::string& cache_dir);

}  // namespace ferry::cli
