// Shared by the `ferry cache` subcommands (cmd_cache.cc, cmd_cache_replica.cc): the cache
// directory and settings a command works on.
#pragma once

#include "base/result.h"
#include "cache/config.h"
#include "cli/args.h"

namespace ferry::cli {

// Settings as the plug-in would see them (the enabled conf file, then FERRY_CACHE_*), with
// --dir winning; kNotFound when the directory is not a ferry cache. Reads --dir and --conf-dir.
Result<cache::Config> ExistingCacheConfig(const Args& args);

}  // namespace ferry::cli
