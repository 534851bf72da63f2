#include "cache/conf_file.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace ferry::cache {
namespace {

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  const size_t b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// The directories of `path` that do not exist yet, created 0755.
Status MakeDirs(const std::string& path) {
  std::string partial;
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos);
    partial = path.substr(0, pos);
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return IoError("cannot create " + partial, errno);
    }
    if (pos != std::string::npos) {
      ++pos;
    }
  }
  return OkStatus();
}

// A key or value ReadConfFile gives back unchanged.
bool ReadsBack(const std::string& s, bool key) {
  return (!key || (!s.empty() && s.find('=') == std::string::npos))
         && s.find_first_of("#\n\r") == std::string::npos && Trim(s) == s;
}

std::string ConfText(const PluginConf& conf) {
  std::string text =
      "# XrdCl client plug-in: the ferry cache (written by 'ferry cache enable').\n"
      "# Every setting can be overridden by FERRY_CACHE_<KEY> environment variables.\n";
  text.append("url = ").append(conf.url).append("\nlib = ").append(conf.lib);
  text.append("\nenable = true\n");
  for (const auto& [k, v] : conf.settings) {
    text.append(k).append(" = ").append(v).append("\n");
  }
  return text;
}

}  // namespace

Result<std::string> WriteConfFile(const std::string& conf_dir, const PluginConf& conf) {
  std::map<std::string, std::string> all = conf.settings;
  all["url"] = conf.url;
  all["lib"] = conf.lib;
  for (const auto& [k, v] : all) {
    if (!ReadsBack(k, true) || !ReadsBack(v, false)) {
      std::string message = "conf setting '";
      message.append(k).append("' = '").append(v);
      message.append("' would not read back (#, line break, blanks, '=')");
      return InvalidArgumentError(std::move(message));
    }
  }
  FERRY_TRY(MakeDirs(conf_dir));
  std::string path = conf_dir + "/" + kConfFileName;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << ConfText(conf);
    out.flush();
    if (!out) {
      return IoError("cannot write " + tmp, errno);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return IoError("cannot write " + path, errno);
  }
  return path;
}

Result<bool> RemoveConfFile(const std::string& conf_dir) {
  const std::string path = conf_dir + "/" + kConfFileName;
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) {
      return false;
    }
    return IoError("cannot remove " + path, errno);
  }
  return true;
}

bool PathExists(const std::string& path) {
  struct stat st = {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string AccountHome() {
  struct passwd pw = {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(::getuid(), &pw, buf, sizeof buf, &found) == 0 && found != nullptr
      && found->pw_dir != nullptr) {
    return found->pw_dir;
  }
  return "";
}

std::string UserConfDir() {
  const char* home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe): read-only
  std::string dir = home != nullptr && *home != '\0' ? home : AccountHome();
  return (dir.empty() ? std::string("/root") : dir) + "/.xrootd/client.plugins.d";
}

std::map<std::string, std::string> ReadConfFile(const std::string& path) {
  std::map<std::string, std::string> kv;
  std::ifstream in(path);
  std::string line;
  for (int n = 0; n < 10000 && std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    kv[Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
  }
  return kv;
}

std::string FindEnabledConf(const std::optional<std::string>& conf_dir) {
  std::vector<std::string> dirs;
  if (conf_dir) {
    dirs.push_back(*conf_dir);
  } else {
    if (const char* env = std::getenv("XRD_PLUGINCONFDIR")) {  // NOLINT: read-only
      dirs.emplace_back(env);
    }
    dirs.push_back(UserConfDir());
    dirs.emplace_back(kSystemConfDir);
  }
  for (const std::string& d : dirs) {
    if (PathExists(d + "/" + kConfFileName)) {
      return d + "/" + kConfFileName;
    }
  }
  return "";
}

Result<Config> EffectiveConfig(const std::optional<std::string>& conf_dir,
                               const std::optional<std::string>& dir,
                               const ReplicaHooks* tier) {
  const std::string conf = FindEnabledConf(conf_dir);
  auto config = FERRY_TRY(
      ConfigFromMap(conf.empty() ? std::map<std::string, std::string>{} : ReadConfFile(conf),
                    /*use_env=*/true, tier));
  if (dir) {
    config.dir = *dir;
  }
  if (config.dir.empty()) {
    return InvalidArgumentError(
        "no cache directory: give --dir, set FERRY_CACHE_DIR, or run "
        "'ferry cache enable --dir DIR'");
  }
  return config;
}

}  // namespace ferry::cache
