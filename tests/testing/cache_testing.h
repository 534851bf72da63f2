// Settings of the cache engine's tests (header only; test support): fast publishing, no fsync,
// short waits, no size pressure, and replicas built only when a test asks.
#pragma once

#include <string>

#include "cache/config.h"

namespace ferry::testing {

inline cache::Config CacheTestConfig(const std::string& dir) {
  cache::Config c;
  c.dir = dir;
  c.max_bytes = 1ull << 30;
  c.min_free_bytes = 0;
  c.publish_ms = 50;
  c.sync = false;
  c.backoff_ms = 1;
  c.lock_timeout_ms = 300;
  c.replica = cache::ReplicaMode::kManual;
  return c;
}

}  // namespace ferry::testing
