#include "plugin/proxy/proxy_config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "base/strings.h"
#include "replica/hooks.h"

namespace ferry::proxy {
namespace {

constexpr std::string_view kPrefix = "ferry.";

Result<bool> ParseBool(const std::string& key, const std::string& value) {
  if (value == "1" || value == "on" || value == "true") {
    return true;
  }
  if (value == "0" || value == "off" || value == "false") {
    return false;
  }
  return InvalidArgumentError("ferry." + key + " '" + value + "': expected 0 or 1");
}

Result<uint64_t> ParseBounded(const std::string& key,
                              const std::string& value,
                              uint64_t lo,
                              uint64_t hi) {
  auto v = ParseUint(value);
  if (!v || *v < lo || *v > hi) {
    return InvalidArgumentError("ferry." + key + " '" + value + "': expected a number from "
                                + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return *v;
}

size_t PortSep(std::string_view hp) {
  return hp.rfind(':');
}

// ferry.origin HOST:PORT (the default origin) or PREFIX=HOST:PORT (a route).
Status AddOrigin(const std::string& value, ProxyConfig& c) {
  const size_t eq = value.find('=');
  const std::string origin = eq == std::string::npos ? value : value.substr(eq + 1);
  if (!ValidHostPort(origin)) {
    return InvalidArgumentError("ferry.origin '" + value + "': expected [PREFIX=]HOST:PORT");
  }
  if (eq == std::string::npos) {
    c.origin = origin;
    return OkStatus();
  }
  std::string prefix = value.substr(0, eq);
  while (prefix.size() > 1 && prefix.back() == '/') {
    prefix.pop_back();
  }
  if (prefix.empty() || prefix[0] != '/' || prefix == "/") {
    return InvalidArgumentError("ferry.origin '" + value
                                + "': the prefix must be a directory path such as /store/mc "
                                  "(the origin of every other path is ferry.origin HOST:PORT)");
  }
  for (const OriginRoute& r : c.routes) {
    if (r.prefix == prefix) {
      std::string message = "ferry.origin '" + value + "': ";
      message.append(prefix).append(" already has an origin (").append(r.origin).append(")");
      return InvalidArgumentError(std::move(message));
    }
  }
  c.routes.push_back({std::move(prefix), origin});
  return OkStatus();
}

}  // namespace

bool ValidHostPort(std::string_view hp) {
  const size_t colon = PortSep(hp);
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= hp.size()) {
    return false;
  }
  for (char c : hp.substr(0, colon)) {
    // Host names, IPv4 addresses and bracketed IPv6 addresses; no user, path or spaces.
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-'
                    || c == '_' || c == '[' || c == ']' || c == ':';
    if (!ok) {
      return false;
    }
  }
  auto port = ParseUint(hp.substr(colon + 1));
  return port && *port >= 1 && *port <= 65535;
}

const std::string& ProxyConfig::OriginOf(std::string_view path) const {
  for (const OriginRoute& r : routes) {  // longest prefix first
    if (path.substr(0, r.prefix.size()) == r.prefix
        && (path.size() == r.prefix.size() || path[r.prefix.size()] == '/')) {
      return r.origin;
    }
  }
  return origin;
}

std::vector<std::string> ProxyConfig::Origins() const {
  std::vector<std::string> all{origin};
  for (const OriginRoute& r : routes) {
    if (std::find(all.begin(), all.end(), r.origin) == all.end()) {
      all.push_back(r.origin);
    }
  }
  return all;
}

std::string ProxyConfig::OriginRoot(std::string_view path) const {
  return "root://" + OriginOf(path) + "/";
}

std::string ProxyConfig::OriginUrl(std::string_view path) const {
  std::string url = OriginRoot(path);
  if (path.empty() || path[0] != '/') {
    url += '/';
  }
  url += path;
  return url;
}

std::string ProxyConfig::self_host() const {
  const size_t colon = PortSep(self);
  return colon == std::string::npos ? self : self.substr(0, colon);
}

int ProxyConfig::self_port() const {
  const size_t colon = PortSep(self);
  auto port = colon == std::string::npos ? Result<uint64_t>(0) : ParseUint(self.substr(colon + 1));
  return port ? static_cast<int>(*port) : 0;
}

namespace {

// One ferry.KEY VALUE directive into `c`; a key that is not the proxy's goes to `cache_keys`
// (checked by the cache's own parser).
Status ApplyKey(const std::string& key,
                const std::string& value,
                ProxyConfig& c,
                std::map<std::string, std::string>& cache_keys) {
  if (key == "origin") {
    FERRY_TRY(AddOrigin(value, c));
  } else if (key == "origin_inflight") {
    c.origin_inflight = static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 1, 4096)));
  } else if (key == "origin_wait_ms") {
    c.origin_wait_ms = static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 0, 3600000)));
  } else if (key == "self") {
    if (!ValidHostPort(value)) {
      return InvalidArgumentError("ferry.self '" + value + "': expected HOST:PORT");
    }
    c.self = value;
  } else if (key == "redirect") {
    c.redirect = FERRY_TRY(ParseBool(key, value));
  } else if (key == "redirect_users") {
    c.redirect_users = static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 1, 4096)));
  } else if (key == "access_log") {
    c.access_log = FERRY_TRY(ParseBool(key, value));
  } else if (key == "lookahead") {
    c.lookahead = static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 0, 64)));
  } else if (key == "ahead_fetches") {
    c.ahead_fetches = static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 1, 256)));
  } else if (key == "timeout") {
    c.timeout_s = static_cast<uint16_t>(FERRY_TRY(ParseBounded(key, value, 1, 3600)));
  } else if (key == "origin_sss") {
    constexpr std::string_view kShared = "server:";
    c.origin_sss_shared = value.compare(0, kShared.size(), kShared) == 0;
    c.origin_sss = c.origin_sss_shared ? value.substr(kShared.size()) : value;
    if (c.origin_sss.empty() || c.origin_sss[0] != '/') {
      return InvalidArgumentError("ferry.origin_sss '" + value
                                  + "': expected [server:]ABSOLUTE_PATH");
    }
  } else if (key == "origin_token" || key == "origin_x509" || key == "origin_ca_dir") {
    if (value.empty() || value[0] != '/') {
      std::string message = "ferry.";
      message.append(key).append(" '").append(value).append("': expected an absolute path");
      return InvalidArgumentError(std::move(message));
    }
    (key == "origin_token"  ? c.origin_token
     : key == "origin_x509" ? c.origin_x509
                            : c.origin_ca_dir) = value;
  } else if (key == "origin_idle_ms") {
    c.origin_idle_ms = static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 0, 600000)));
  } else if (key == "origin_idle_max") {
    c.origin_idle_max = static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 0, 65536)));
  } else if (key == "copy_cache_fraction") {
    auto f = ParseDouble(value);
    if (!f || !(*f >= 0 && *f <= 1)) {
      return InvalidArgumentError("ferry.copy_cache_fraction '" + value
                                  + "': expected a share of the file from 0 to 1");
    }
    c.copy_cache_fraction = *f;
  } else if (key == "copy_memory") {
    auto bytes = ParseSize(value);
    if (!bytes) {
      return InvalidArgumentError("ferry.copy_memory '" + value + "': expected a size (512M, 2G)");
    }
    c.copy_memory = *bytes;
  } else if (key == "data_dirs") {
    std::istringstream dirs(value);
    for (std::string dir; dirs >> dir;) {
      c.data_dirs.push_back(dir);
    }
  } else if (key == "disk_high" || key == "disk_low") {
    (key == "disk_high" ? c.disk_high : c.disk_low) =
        static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 0, 99)));
  } else if (key == "disk_retry_s") {
    c.disk_retry_s = static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 1, 86400)));
  } else if (key == "status_ms") {
    c.status_ms = static_cast<uint32_t>(FERRY_TRY(ParseBounded(key, value, 10, 60000)));
  } else {
    cache_keys[key] = value;  // validated by the cache's own parser below
  }
  return OkStatus();
}

// ferry.dir first, then ferry.data_dirs, each once; ferry.dir defaults to the first data dir.
Status SettleDataDirs(ProxyConfig& c) {
  std::vector<std::string> dirs;
  if (!c.cache.dir.empty()) {
    dirs.push_back(c.cache.dir);
  }
  for (std::string& dir : c.data_dirs) {
    while (dir.size() > 1 && dir.back() == '/') {
      dir.pop_back();
    }
    if (dir.empty() || dir[0] != '/') {
      return InvalidArgumentError("ferry.data_dirs '" + dir + "': expected an absolute path");
    }
    if (std::find(dirs.begin(), dirs.end(), dir) != dirs.end()) {
      if (dir == c.cache.dir) {
        continue;  // ferry.dir repeated among the data dirs: one disk
      }
      return InvalidArgumentError("ferry.data_dirs: " + dir + " given twice");
    }
    dirs.push_back(std::move(dir));
  }
  if (dirs.empty()) {
    return InvalidArgumentError("ferry.dir (the cache directory) is missing");
  }
  c.cache.dir = dirs.front();
  c.data_dirs = std::move(dirs);
  if (c.disk_low != 0 && c.disk_high != 0 && c.disk_low >= c.disk_high) {
    return InvalidArgumentError("ferry.disk_low " + std::to_string(c.disk_low)
                                + " must be below ferry.disk_high " + std::to_string(c.disk_high));
  }
  return OkStatus();
}

}  // namespace

Result<ProxyConfig> ParseProxyConfig(std::string_view text) {
  ProxyConfig c;
  std::map<std::string, std::string> cache_keys;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) {
      line.resize(hash);
    }
    std::istringstream words(line);
    std::string directive;
    if (!(words >> directive) || directive.compare(0, kPrefix.size(), kPrefix) != 0) {
      continue;
    }
    const std::string key = directive.substr(kPrefix.size());
    std::string value;
    std::string word;
    while (words >> word) {
      value += value.empty() ? word : " " + word;
    }
    FERRY_TRY(ApplyKey(key, value, c, cache_keys));
  }
  // A proxy serves many files at once: more workers (asynchronous reads of different files run
  // on them concurrently) than a client needs. One origin channel: every file's fetches share
  // one TCP connection, which the metadata of the first opens has already grown out of slow
  // start when the data fetches begin. Extra channels start cold and cost a first pass more
  // than they give (bench/proxy_wan, AGC cold: 1.35x direct with 4, 1.05x with 1; the replay
  // and 8 processes unchanged). An origin that serves each connection's reads slowly (disk
  // seeks) is the case for `channels` > 1.
  cache_keys.try_emplace("workers", "64");
  cache_keys.try_emplace("channels", "1");
  // A copy from an origin faster than the cache's disk (a site's LAN) would otherwise leave
  // holes wherever the write-behind queue was full, fetched again by the next reader: its
  // fetches wait for room instead (cache/writer.h), and a stuck disk costs one wait.
  cache_keys.try_emplace("writeback_wait_ms", "1000");
  // No replica tier here yet: a replica's virtual file has its own size, and the proxy answers
  // stat by path from the byte tier's index (XrdOss::Stat), which would disagree with it.
  cache_keys.try_emplace("replica", "off");
  c.cache =
      FERRY_TRY_CTX(cache::ConfigFromMap(cache_keys, /*use_env=*/false, replica::Hooks().get()),
                    "ferry.* cache key");
  if (c.origin.empty()) {
    return InvalidArgumentError("ferry.origin HOST:PORT is missing");
  }
  std::stable_sort(c.routes.begin(), c.routes.end(),
                   [](const auto& a, const auto& b) { return a.prefix.size() > b.prefix.size(); });
  FERRY_TRY(SettleDataDirs(c));
  // The origin knows the proxy by one identity; two would leave it to XrdCl which one it shows.
  if (int{!c.origin_sss.empty()} + int{!c.origin_token.empty()} + int{!c.origin_x509.empty()} > 1) {
    return InvalidArgumentError(
        "ferry.origin_sss, ferry.origin_token and ferry.origin_x509: give at most one");
  }
  // Read-ahead's fetches at once: a client waiting on a miss holds back no other's read-ahead.
  c.cache.readahead_fetches = c.ahead_fetches;
  c.cache.readahead_fetches_app_waits = c.ahead_fetches;
  if (!c.cache.readahead) {
    c.lookahead = 0;  // the client cache's switch turns the proxy's read-ahead off too
  }
  return c;
}

Result<ProxyConfig> LoadProxyConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return IoError("cannot read " + path, errno);
  }
  std::stringstream text;
  text << in.rdbuf();
  return FERRY_TRY_CTX(ParseProxyConfig(text.str()), path);
}

}  // namespace ferry::proxy
