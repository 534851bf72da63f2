// Where the cache's settings live outside the plug-in: the XrdCl plug-in conf file
// (`ferry-cache.conf`) and how a tool finds the one XrdCl would load.
//
// The plug-in itself gets its settings from XrdCl as a map; `ferry cache` commands, the replica
// builder and the tests find and read the same file here, so every reader agrees on which file
// is in effect and on its syntax.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/result.h"
#include "cache/config.h"

namespace ferry::cache {

inline constexpr const char* kConfFileName = "ferry-cache.conf";
inline constexpr const char* kSystemConfDir = "/etc/xrootd/client.plugins.d";

// Whether anything exists at `path` (a conf file, the plug-in library a conf names).
bool PathExists(const std::string& path);

// The account's home directory from the password database ("" when unknown): where XrdCl looks
// for the user's plug-in confs (it ignores $HOME).
std::string AccountHome();

// $HOME/.xrootd/client.plugins.d ($HOME as users and scripts expect; the account's home when
// $HOME is unset).
std::string UserConfDir();

// `key = value` lines, '#' starts a comment, blanks trimmed; at most 10,000 lines. A file that
// cannot be opened reads as empty.
std::map<std::string, std::string> ReadConfFile(const std::string& path);

// The conf file in effect: `conf_dir` when given; else $XRD_PLUGINCONFDIR, the user's (XrdCl
// reads it after the system one, so it wins), the system's — the first that has the file.
// "" when none has it.
std::string FindEnabledConf(const std::optional<std::string>& conf_dir);

// Settings as the plug-in would see them: the enabled conf file's keys, then FERRY_CACHE_*
// overrides, then `dir` when given. kInvalidArgument when no directory results.
Result<Config> EffectiveConfig(const std::optional<std::string>& conf_dir,
                               const std::optional<std::string>& dir);

}  // namespace ferry::cache
