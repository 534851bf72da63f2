// Shared by the `ferry cache` subcommands (cmd_cache.cc, cmd_cache_replica.cc): the cache
// directory and settings a command works on.
#pragma once

#include "base/result.h"
#include "cache/config.h"
#include "cli/args.h"

namespace ferry::cli {

// The options every command on an existing cache takes (ExistingCacheConfig reads them).
inline constexpr OptionSpec kCacheDirOption = {"--dir", "DIR", "the cache directory",
                                               "$FERRY_CACHE_DIR, else the enabled conf file's"};
inline constexpr OptionSpec kConfDirOption = {
    "--conf-dir", "D", "the directory of the conf file to read",
    "$XRD_PLUGINCONFDIR, else ~/.xrootd/client.plugins.d, else /etc/xrootd/client.plugins.d"};
inline constexpr OptionSpec kCacheJsonOption = {"--json", "", "print one JSON document"};

// Settings as the plug-in would see them (the enabled conf file, then FERRY_CACHE_*), with
// --dir winning; kNotFound when the directory is not a ferry cache. Reads --dir and --conf-dir.
Result<cache::Config> ExistingCacheConfig(const Args& args);

}  // namespace ferry::cli
