// Fuzz target: the cache's counters file DIR/stats (cache/stats.h), which every process of a
// shared (group) cache rewrites, so its bytes come from other users' processes. Input: the bytes
// of a stats file. What decodes must re-encode to a file that decodes to the same counters.
#include <cstdint>
#include <span>

#include "cache/stats.h"

using namespace ferry::cache;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto values = DecodeStatsFile(std::span<const uint8_t>(data, size));
  if (!values.has_value()) {
    return 0;
  }
  auto back = DecodeStatsFile(EncodeStatsFile(*values));
  if (!back.has_value() || *back != *values) {
    __builtin_trap();
  }
  return 0;
}
