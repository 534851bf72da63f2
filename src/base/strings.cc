#include "base/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ferry {

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x))
                  == std::tolower(static_cast<unsigned char>(y));
         });
}

bool EndsWithNoCase(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size()
         && EqualsNoCase(text.substr(text.size() - suffix.size()), suffix);
}

std::string HumanBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && u + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g %s", v, kUnits[u]);
  }
  return buf;
}

Result<uint64_t> ParseSize(std::string_view text) {
  std::string_view t = text;
  if (t.ends_with("iB")) {
    t.remove_suffix(2);
  } else if (t.ends_with("B")) {  // "10MB" and "10B" alike
    t.remove_suffix(1);
  }
  uint64_t mult = 1;
  if (!t.empty()) {
    switch (t.back()) {
      case 'k':
      case 'K':
        mult = 1ull << 10;
        break;
      case 'm':
      case 'M':
        mult = 1ull << 20;
        break;
      case 'g':
      case 'G':
        mult = 1ull << 30;
        break;
      case 't':
      case 'T':
        mult = 1ull << 40;
        break;
      default:
        break;
    }
    if (mult != 1) {
      t.remove_suffix(1);
    }
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size() || v < 0) {
    return InvalidArgumentError("not a size: '" + std::string(text)
                                + "' (examples: 4096, 64K, 16M, 100G)");
  }
  // 2^64 and above (or NaN) have no uint64 value: converting them is undefined behaviour.
  const double bytes = v * static_cast<double>(mult);
  if (!(bytes < 18446744073709551616.0)) {
    return InvalidArgumentError("size too large: '" + std::string(text) + "'");
  }
  return static_cast<uint64_t>(bytes);
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

Result<int64_t> ParseInt(std::string_view text) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgumentError("not an integer: '" + std::string(text) + "'");
  }
  return v;
}

Result<uint64_t> ParseUint(std::string_view text) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgumentError("not a non-negative integer: '" + std::string(text) + "'");
  }
  return v;
}

Result<double> ParseDouble(std::string_view text) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgumentError("not a number: '" + std::string(text) + "'");
  }
  return v;
}

Result<int64_t> ParseDurationSeconds(std::string_view text) {
  int64_t unit = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'd':
        unit = 86400;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'm':
        unit = 60;
        break;
      case 's':
        unit = 1;
        break;
      default:
        unit = 0;
    }
    if (unit != 0) {
      text.remove_suffix(1);
    } else {
      unit = 1;  // plain seconds
    }
  }
  auto v = ParseInt(text);
  // Bounded so the product cannot overflow: 100 years is more than any cache keeps anything.
  if (!v || *v <= 0 || *v > int64_t{100} * 365 * 86400 / unit) {
    return InvalidArgumentError("bad duration '" + std::string(text)
                                + "' (use 30d, 12h, 15m or 60s)");
  }
  return *v * unit;
}

}  // namespace ferry
