// Context: what every file opened through the plug-in shares in one process — the settings,
// the cache engine of the configured directory, and the worker threads of the miss path.
//
// Settings come from the conf-file keys XrdCl hands to XrdClGetPlugIn, overridden by
// FERRY_CACHE_<KEY> environment variables (cache/config.h). Without a usable directory the
// plug-in stays loaded but every file passes straight through (and says why once on stderr).
// Thread-safety: immutable after creation; shared by shared_ptr.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "cache/cache.h"
#include "cache/config.h"
#include "plugin/xrdcl/next_files.h"
#include "plugin/xrdcl/worker_pool.h"

namespace ferry::plugin {

struct Context {
  cache::Config config;
  std::shared_ptr<cache::Cache> cache;  // null: pass-through only
  std::unique_ptr<WorkerPool> pool;
  // Files opened ahead of a reader that opens a directory's files in order (readahead on).
  std::unique_ptr<NextFiles> next_files;
  std::string disabled_reason;
  // This process is a copy tool (cache/bulk_detect.h): its files are read through uncached.
  bool copy_tool = false;
  // Set by the exit handler: XrdCl objects must not be destroyed any more.
  std::atomic<bool> exiting{false};
};

// Contexts live until the process exits (they are never destroyed: XrdCl finalises itself in
// its own exit-time destructors, and objects holding XrdCl::Files must not outlive that). An
// exit handler, registered with the first context and run before XrdCl's finalisation, stores
// and publishes what the cache has queued and merges its counters.
std::shared_ptr<Context> MakeContext(const std::map<std::string, std::string>& conf);

}  // namespace ferry::plugin
