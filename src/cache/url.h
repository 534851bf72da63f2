// Cache keys from URLs: the normalised URL names a cache entry, its hash names the files.
//
// NormalizeUrl() keeps what identifies the remote file and drops what does not (user, password,
// query parameters other than an allow-list, fragment), so that tokens carried in URLs never
// reach the cache directory. See docs/format/page-store.md, "Normalised URL".
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

namespace ferry::cache {

// "root://user@Host:1094//data//f.root?authz=x&a=1" -> "root://host:1094/data/f.root" (with an
// empty allow-list). kInvalidArgument when there is no "scheme://host".
Result<std::string> NormalizeUrl(std::string_view url,
                                 std::span<const std::string> allowed_params = {});

// 16 lower-case hex digits of XXH3-64 of the normalised URL.
std::string EntryKey(std::string_view normalized_url);

// Default port of a scheme, 0 when unknown.
int DefaultPort(std::string_view scheme);

}  // namespace ferry::cache
