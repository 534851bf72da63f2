// One logger for every ferry component.
//
// A line is one event: "ferry <level> <component>: <message>". The threshold comes from
// FERRY_LOG (debug|info|warn|error|off; default warn), read once; a process that hosts ferry
// inside another program (the XrdCl plug-in) installs a sink that forwards each line to the host's
// own log and lowers the threshold to what that log shows, so XRD_LOGLEVEL=Debug shows ferry's
// messages among XRootD's.
//
// Cost when a level is off: one relaxed atomic load (Enabled). Callers that build a message with
// loops or allocations check Enabled first; the formatting helpers check it themselves.
#pragma once

#include <string_view>

namespace ferry::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

// Parses "debug", "info", "warn"/"warning", "error", "off" (case-insensitive). False otherwise.
bool ParseLevel(std::string_view text, Level* out);
std::string_view LevelName(Level level);

// The lowest level written. First use reads FERRY_LOG; SetThreshold overrides it (tests, hosts).
Level Threshold();
void SetThreshold(Level level);
inline bool Enabled(Level level) {
  return level >= Threshold();
}

// Receives every line at or above the threshold. Must be thread-safe; called without ferry locks.
// nullptr restores the default sink, which writes the line to stderr in one write(2) call.
using Sink = void (*)(Level level, std::string_view component, std::string_view message);
void SetSink(Sink sink);

// Writes one event if `level` is enabled. Messages longer than 2 KiB are cut.
void Write(Level level, std::string_view component, std::string_view message);
__attribute__((format(printf, 3, 4))) void Printf(Level level,
                                                  const char* component,
                                                  const char* format,
                                                  ...);

// Formats the default line ("ferry debug cache: ...") into `out`; returns its length (no NUL
// counted, always NUL-terminated, cut to `size - 1`). Shared by the default sink and tests.
size_t FormatLine(
    char* out, size_t size, Level level, std::string_view component, std::string_view message);

}  // namespace ferry::log

// printf-style logging with the enabled check before the arguments are formatted.
#define FERRY_LOG_AT(level, component, ...)                \
  do {                                                     \
    if (::ferry::log::Enabled(level)) {                    \
      ::ferry::log::Printf(level, component, __VA_ARGS__); \
    }                                                      \
  } while (0)
#define FERRY_DEBUG(component, ...) \
  FERRY_LOG_AT(::ferry::log::Level::kDebug, component, __VA_ARGS__)
#define FERRY_INFO(component, ...) FERRY_LOG_AT(::ferry::log::Level::kInfo, component, __VA_ARGS__)
#define FERRY_WARN(component, ...) FERRY_LOG_AT(::ferry::log::Level::kWarn, component, __VA_ARGS__)
