#include "cache/conf_file.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

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

}  // namespace

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
                               const std::optional<std::string>& dir) {
  const std::string conf = FindEnabledConf(conf_dir);
  auto config = FERRY_TRY(ConfigFromMap(
      conf.empty() ? std::map<std::string, std::string>{} : ReadConfFile(conf), /*use_env=*/true));
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
