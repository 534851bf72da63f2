// Fuzz target: the site proxy's configuration parser (plugin/proxy/proxy_config.h) and, through
// it, the cache's key parser (cache/config.h): xrootd configuration files are written by people
// and by `ferry proxy config`, and a proxy reads whatever the file holds. Input: configuration
// text. Whatever parses must hold what the proxy relies on: an origin and a self that are
// HOST:PORT, a cache directory, at most one origin identity.
#include "plugin/proxy/proxy_config.h"

#include <cstdint>
#include <string_view>

using namespace ferry::proxy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = ParseProxyConfig(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!c.has_value()) {
    return 0;
  }
  const int identities =
      int{!c->origin_sss.empty()} + int{!c->origin_token.empty()} + int{!c->origin_x509.empty()};
  if (!ValidHostPort(c->origin) || c->cache.dir.empty() || identities > 1
      || (!c->self.empty() && (c->self_port() < 1 || c->self_port() > 65535))) {
    __builtin_trap();
  }
  (void)c->OriginUrl("/store/f.root");
  return 0;
}
