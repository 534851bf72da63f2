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

// What `ferry cache enable` writes: the plug-in's URL pattern and library, `enable = true`, and
// the cache's settings (keys of cache/config.h).
struct PluginConf {
  std::string url = "root://*";
  std::string lib;
  std::map<std::string, std::string> settings;
};

// Writes CONF_DIR/ferry-cache.conf (creating CONF_DIR and its parents, 0755), written beside
// and renamed so that XrdCl never reads half a file; ReadConfFile reads back url, lib, enable
// and the settings. Returns its path. kInvalidArgument for a key or value that would not read
// back (empty key, '=' in a key, '#' or a line break anywhere, blanks around it).
Result<std::string> WriteConfFile(const std::string& conf_dir, const PluginConf& conf);
// Removes CONF_DIR/ferry-cache.conf: false when there was none.
Result<bool> RemoveConfFile(const std::string& conf_dir);

// The conf file in effect: `conf_dir` when given; else $XRD_PLUGINCONFDIR, the user's (XrdCl
// reads it after the system one, so it wins), the system's — the first that has the file.
// "" when none has it.
std::string FindEnabledConf(const std::optional<std::string>& conf_dir);

// Settings as the plug-in would see them: the enabled conf file's keys, then FERRY_CACHE_*
// overrides, then `dir` when given; the replica tier's keys checked by `tier` as ConfigFromMap
// does. kInvalidArgument when no directory results.
Result<Config> EffectiveConfig(const std::optional<std::string>& conf_dir,
                               const std::optional<std::string>& dir,
                               const ReplicaHooks* tier = nullptr);

}  // namespace ferry::cache
