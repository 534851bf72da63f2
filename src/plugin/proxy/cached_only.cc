#include "plugin/proxy/cached_only.h"

#include <cerrno>
#include <cstring>

namespace ferry::proxy {

bool OnlyIfCachedValue(const char* value) {
  return value != nullptr
         && (std::strcmp(value, "1") == 0 || std::strcmp(value, "true") == 0
             || std::strcmp(value, "yes") == 0);
}

// kNotFound with ENODATA: a code the proxy maps to ENODATA alone, and one the cache treats as
// final (never retried, origin.h).
Error NotCachedError() {
  return {ErrorCode::kNotFound, "not in the cache (ferry.only_if_cached)", ENODATA};
}

bool IsNotCached(const Error& e) {
  return e.code() == ErrorCode::kNotFound && e.sys_errno() == ENODATA;
}

void CachedOnlyOrigin::Read(std::span<cache::OriginRead> reads) {
  for (cache::OriginRead& read : reads) {
    (void)FailNotCached(read.ranges);
  }
}

Status FailNotCached(std::span<io::ReadRequest> requests) {
  for (io::ReadRequest& r : requests) {
    r.status = NotCachedError();
  }
  return NotCachedError();
}

}  // namespace ferry::proxy
