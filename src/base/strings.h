// Small string helpers shared by the CLI and the libraries: sizes with units, splitting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ferry {

// "1.5 GiB", "312 KiB", "17 B" (binary units, 3 significant digits).
std::string HumanBytes(double bytes);
// "100G", "64K", "16M", "1T", "4096" (binary multiples; optional trailing 'B' or 'iB').
Result<uint64_t> ParseSize(std::string_view text);
// ASCII case-insensitive equality, and suffix test.
bool EqualsNoCase(std::string_view a, std::string_view b);
bool EndsWithNoCase(std::string_view text, std::string_view suffix);
// Splits on a single character; keeps empty pieces.
std::vector<std::string_view> Split(std::string_view text, char sep);
// Strict decimal parse of the whole string.
Result<int64_t> ParseInt(std::string_view text);
Result<uint64_t> ParseUint(std::string_view text);
Result<double> ParseDouble(std::string_view text);
// A positive duration in seconds: "30d", "12h", "15m", "60s" or plain seconds.
Result<int64_t> ParseDurationSeconds(std::string_view text);

}  // namespace ferry
