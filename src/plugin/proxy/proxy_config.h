// ProxyConfig: the settings of ferry's site proxy, read from `ferry.<key> <value>` directives in
// the xrootd configuration file that loads the proxy library (xrootd ignores directives of
// prefixes it does not know). `ferry proxy config` writes them; docs: docs/proxy.md.
//
//   directive              default  meaning
//   ferry.origin HOST:PORT (none)   the origin paths are read from: root://HOST:PORT//path
//   ferry.origin PREFIX=HOST:PORT   paths under PREFIX (a directory: /store/mc matches
//                                   /store/mc/... only) are read from HOST:PORT instead; the
//                                   longest matching prefix wins; repeat for more origins
//   ferry.origin_inflight N 64      requests in flight at once to one origin (per HOST:PORT)
//   ferry.origin_wait_ms MS 10000   how long a request waits for a free slot of its origin
//                                   before the client gets an error (origin_gate.h)
//   ferry.self HOST:PORT   (none)   how clients reach this proxy; needed for self-redirects
//   ferry.redirect 0|1     1        redirect each read-only open to this proxy under a synthetic
//                                   user (ferryc<N>), so each open gets its own client channel
//   ferry.redirect_users N 64       synthetic users handed out in turn (bounds the channels a
//                                   client process keeps open to the proxy)
//   ferry.access_log 0|1   1        per-file access records in DIR/access.jsonl
//   ferry.lookahead N      8        read-ahead on (the cache engine's, readahead/file_ahead.h:
//                                   ROOT-aware and sequential) when N > 0; 0: off
//                                   (ferry.readahead off too). Its window is the engine's (the
//                                   link's bandwidth-delay product, readahead_max), not N.
//   ferry.ahead_fetches N  32       read-ahead fetches in flight at once over all files, also
//                                   while clients wait on misses (as in the client plug-in:
//                                   cache::Config::readahead_fetches*). A fetch is
//                                   about one cluster (0.4-0.6 MB of AGC baskets): 8 of them
//                                   carried ~75 MB/s over 40 ms (bytes in flight / RTT), short
//                                   of a 1 Gbit/s link; 32 fill it with room for longer RTTs
//   ferry.timeout S        60       origin request timeout in seconds; a request left
//                                   unanswered that long fails ("timer expired"), it is not
//                                   retried
//   ferry.status_ms MS     1000     how often DIR/proxy-status.json is rewritten while it
//                                   changes (tests set it short to wait for an update)
//   ferry.origin_idle_ms MS 30000   how long a closed file's origin handle stays open for the
//                                   next open of the same path (XrdHttp opens per GET): a
//                                   reuse saves the origin open's WAN round trip (0: off)
//   ferry.origin_idle_max N 256     origin handles kept idle at most (least recently closed
//                                   closed first)
//   ferry.copy_cache_fraction F 0.25  share of a file (0..1) a whole-file copy (xrdcp) leaves
//                                   in the cache; the rest is served through uncached
//                                   (copy_through.h), so copies do not evict the analyses'
//                                   working set. 0.25: the client plug-in's bypass_fraction;
//                                   1: copies are cached whole (the rule is off)
//   ferry.copy_memory SIZE 1G       memory all copies served through hold at once (blocks read
//                                   ahead, being read, kept for pages read again: up to 80 MiB
//                                   per copy); over it a copy reads ahead less and reads what
//                                   it needs straight into the client's buffer (copy_budget.h)
//   ferry.origin_sss KT    (none)   the proxy's own sss keytab for its origin channels;
//                                   "server:KT": KT is also the server's sss keytab, its last
//                                   key the proxy's (`ferry proxy config --origin-credentials`)
//   ferry.origin_token F   (none)   a bearer token file for the origin channels (ztn, read each
//                                   time a channel authenticates: renewed tokens are used)
//   ferry.origin_x509 F    (none)   an X.509 proxy certificate file for the origin channels
//                                   (gsi, read each time a channel authenticates)
//   ferry.origin_ca_dir D  (none)   CA certificates that verify the origin's TLS or host
//                                   certificate
//   ferry.data_dirs D [D...] (none) more cache disks beside ferry.dir (repeatable): one page
//                                   store on each, entries placed by free space and load, a
//                                   failing disk taken out of service (disk_set.h). Status
//                                   file and access log stay in ferry.dir
//   ferry.disk_high P      0        per disk: evict when more than P% of its file system is in
//                                   use (min_free raised to (100-P)% of it); 0: min_free only
//   ferry.disk_low P       0        per disk: eviction goes on until at most P% is in use;
//                                   0: until min_free (P below disk_high)
//   ferry.disk_retry_s S   60       a disk out of service is probed again every S seconds
//   ferry.<cache key> V             every key of the client cache (cache/config.h): dir,
//                                   max_size, min_free, page_size, iogap, channels, ...;
//                                   ferry.cache_key_file F encrypts the cache at rest
//                                   (docs/format/page-store.md; `ferry proxy run --encrypt-key`)
//
// Thread-safety: a ProxyConfig is a value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cache/config.h"

namespace ferry::proxy {

// Paths under `prefix` are read from `origin` (ferry.origin PREFIX=HOST:PORT).
struct OriginRoute {
  std::string prefix;  // starts with '/', no trailing '/'
  std::string origin;  // host:port
};

struct ProxyConfig {
  std::string origin;               // host:port of every path no route claims
  std::vector<OriginRoute> routes;  // longest prefix first
  uint32_t origin_inflight = 64;
  uint32_t origin_wait_ms = 10000;
  std::string self;  // host:port, "" = no self-redirect
  bool redirect = true;
  uint32_t redirect_users = 64;
  bool access_log = true;
  uint32_t lookahead = 8;
  uint32_t ahead_fetches = 32;
  uint16_t timeout_s = 60;
  uint32_t status_ms = 1000;
  uint32_t origin_idle_ms = 30000;
  uint32_t origin_idle_max = 256;
  double copy_cache_fraction = 0.25;
  uint64_t copy_memory = 1ull << 30;
  std::string origin_sss;          // keytab path, "" = no sss identity at the origin
  bool origin_sss_shared = false;  // origin_sss is the server's sss keytab too
  std::string origin_token;        // token file path, "" = none
  std::string origin_x509;         // X.509 proxy file path, "" = none
  std::string origin_ca_dir;       // X509_CERT_DIR of the origin channels, "" = the default
  // Every cache disk, cache.dir first (ferry.dir, then ferry.data_dirs; each once).
  std::vector<std::string> data_dirs;
  uint32_t disk_high = 0;  // percent, 0: none
  uint32_t disk_low = 0;   // percent, 0: none
  uint32_t disk_retry_s = 60;
  cache::Config cache;

  // The origin (host:port) a path is read from: the longest route prefix it lies under, else
  // `origin`.
  const std::string& OriginOf(std::string_view path) const;
  // Every origin the proxy reads from, each once, `origin` first.
  std::vector<std::string> Origins() const;
  // root://ORIGIN//path for the path's origin (path without CGI; a missing leading '/' is
  // added).
  std::string OriginUrl(std::string_view path) const;
  // root://ORIGIN/ of the path's origin (for XrdCl::FileSystem).
  std::string OriginRoot(std::string_view path) const;
  // Self-redirects are configured and on.
  bool redirects() const { return redirect && !self.empty(); }
  std::string self_host() const;
  int self_port() const;
};

// Parses the ferry.* directives of an xrootd configuration text. Lines without the prefix are
// ignored, as are comments (from '#'). Errors: a missing ferry.origin, no ferry.dir nor
// ferry.data_dirs (ferry.dir is then the first of them), a relative or repeated cache directory,
// disk_low not below disk_high, a malformed HOST:PORT, an invalid value (naming the directive).
Result<ProxyConfig> ParseProxyConfig(std::string_view text);
// Reads and parses a configuration file.
Result<ProxyConfig> LoadProxyConfig(const std::string& path);

// "HOST:PORT" with a non-empty host and a port in 1..65535.
bool ValidHostPort(std::string_view host_port);

}  // namespace ferry::proxy
