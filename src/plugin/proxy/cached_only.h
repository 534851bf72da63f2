// Only-if-cached reads: a client that adds `ferry.only_if_cached=1` to the opaque part of its
// URL (root://proxy//path?ferry.only_if_cached=1) is served the bytes the proxy's cache holds
// and gets an error for any other byte, instead of an origin fetch (HTTP's Cache-Control:
// only-if-cached). The client sees errno ENODATA, which XRootD reports as "no data available"
// (kXR_AttrNotFound, 3027: XProtocol maps ENODATA, Linux's ENOATTR, there): at open when the file
// has no entry (or its entry is due for revalidation at the origin), at a read when a byte of the
// read is not held. Such a handle sends no request to the origin, not even an open.
//
// Thread-safety: CachedOnlyOrigin is stateless; the functions are pure.
#pragma once

#include <span>
#include <string_view>

#include "base/result.h"
#include "cache/origin.h"

namespace ferry::proxy {

// The opaque key and the value that asks for it.
inline constexpr std::string_view kOnlyIfCachedKey = "ferry.only_if_cached";
// True for a value of that key that turns it on ("1", "true", "yes").
bool OnlyIfCachedValue(const char* value);

// The error of a byte an only-if-cached handle cannot have.
Error NotCachedError();
bool IsNotCached(const Error& e);

// The origin of an only-if-cached handle: every request fails with NotCachedError(), so a miss
// is an error, never a fetch.
class CachedOnlyOrigin final : public cache::Origin {
 public:
  Result<cache::OriginInfo> Stat() override { return NotCachedError(); }
  void Read(std::span<cache::OriginRead> reads) override;
};

// Sets NotCachedError() as the status of each of `requests`; returns it.
Status FailNotCached(std::span<io::ReadRequest> requests);

}  // namespace ferry::proxy
