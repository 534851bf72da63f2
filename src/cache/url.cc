#include "cache/url.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

#include "base/hash.h"
#include "base/strings.h"

namespace ferry::cache {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Collapses slashes, drops "." and resolves ".." lexically; always starts with '/'.
std::string NormalizePath(std::string_view path) {
  std::vector<std::string_view> parts;
  for (std::string_view seg : Split(path, '/')) {
    if (seg.empty() || seg == ".") {
      continue;
    }
    if (seg == "..") {
      if (!parts.empty()) {
        parts.pop_back();
      }
      continue;
    }
    parts.push_back(seg);
  }
  std::string out;
  for (std::string_view p : parts) {
    out += '/';
    out += p;
  }
  if (out.empty()) {
    out = "/";
  }
  return out;
}

}  // namespace

int DefaultPort(std::string_view scheme) {
  if (scheme == "root" || scheme == "roots" || scheme == "xroot" || scheme == "xroots") {
    return 1094;
  }
  if (scheme == "http") {
    return 80;
  }
  if (scheme == "https" || scheme == "davs") {
    return 443;
  }
  return 0;
}

Result<std::string> NormalizeUrl(std::string_view url, std::span<const std::string> allowed) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    return InvalidArgumentError("not a URL (no scheme://): " + std::string(url.substr(0, 200)));
  }
  const std::string scheme = Lower(url.substr(0, sep));
  std::string_view rest = url.substr(sep + 3);
  if (size_t hash = rest.find('#'); hash != std::string_view::npos) {
    rest = rest.substr(0, hash);
  }
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "/" : rest.substr(slash);
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1);  // user[:password]@ dropped
  }
  std::string host;
  std::string_view port_text;
  if (authority.starts_with('[')) {  // [v6]:port
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("bad IPv6 host in URL");
    }
    host = Lower(authority.substr(0, close + 1));
    std::string_view tail = authority.substr(close + 1);
    if (tail.starts_with(':')) {
      port_text = tail.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    host = Lower(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
    }
  }
  if (host.empty()) {
    return InvalidArgumentError("URL has no host");
  }
  int port = DefaultPort(scheme);
  if (!port_text.empty()) {
    auto p = ParseUint(port_text);
    if (!p || *p == 0 || *p > 65535) {
      return InvalidArgumentError("bad port in URL: " + std::string(port_text));
    }
    port = static_cast<int>(*p);
  }
  std::string out = scheme + "://" + host;
  if (port != 0) {
    out += ":" + std::to_string(port);
  }
  out += NormalizePath(path);
  std::vector<std::string_view> kept;
  if (!allowed.empty() && !query.empty()) {
    for (std::string_view kv : Split(query, '&')) {
      std::string_view name = kv.substr(0, kv.find('='));
      if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) {
        kept.push_back(kv);
      }
    }
  }
  std::sort(kept.begin(), kept.end());
  for (size_t i = 0; i < kept.size(); ++i) {
    out += i == 0 ? '?' : '&';
    out += kept[i];
  }
  return out;
}

std::string EntryKey(std::string_view normalized_url) {
  char buf[17];
  std::snprintf(
      buf, sizeof buf, "%016llx",
      static_cast<unsigned long long>(hash::Xxh3(normalized_url.data(), normalized_url.size())));
  return buf;
}

}  // namespace ferry::cache
