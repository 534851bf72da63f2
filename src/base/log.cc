#include "base/log.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ferry::log {
namespace {

// -1: not read yet. Threshold() reads FERRY_LOG on first use; a race between two first uses
// only makes both read the same variable.
std::atomic<int> g_threshold{-1};
std::atomic<Sink> g_sink{nullptr};

constexpr Level kDefaultLevel = Level::kWarn;

Level ReadEnvironment() {
  // getenv is read-only here; ferry never modifies its environment.
  const char* env = std::getenv("FERRY_LOG");  // NOLINT(concurrency-mt-unsafe)
  Level level = kDefaultLevel;
  if (env != nullptr && *env != '\0' && !ParseLevel(env, &level)) {
    // Say so once rather than silently ignore a typo an admin will wonder about.
    std::fprintf(stderr, "ferry: FERRY_LOG=%s is not debug|info|warn|error|off; using warn\n", env);
    level = kDefaultLevel;
  }
  return level;
}

void StderrSink(Level level, std::string_view component, std::string_view message) {
  char line[2304];
  size_t n = FormatLine(line, sizeof line - 1, level, component, message);
  line[n++] = '\n';
  // One write per line, so lines of concurrent threads and processes do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line, n);
  (void)ignored;
}

}  // namespace

bool ParseLevel(std::string_view text, Level* out) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "debug" || lower == "dump") {
    *out = Level::kDebug;
  } else if (lower == "info") {
    *out = Level::kInfo;
  } else if (lower == "warn" || lower == "warning") {
    *out = Level::kWarn;
  } else if (lower == "error") {
    *out = Level::kError;
  } else if (lower == "off" || lower == "none") {
    *out = Level::kOff;
  } else {
    return false;
  }
  return true;
}

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    case Level::kOff:
      return "off";
  }
  return "?";
}

Level Threshold() {
  int t = g_threshold.load(std::memory_order_relaxed);
  if (t < 0) {
    t = static_cast<int>(ReadEnvironment());
    int expected = -1;
    // SetThreshold may have run meanwhile; its value wins.
    if (!g_threshold.compare_exchange_strong(expected, t, std::memory_order_relaxed)) {
      t = expected;
    }
  }
  return static_cast<Level>(t);
}

void SetThreshold(Level level) {
  g_threshold.store(static_cast<int>(level), std::memory_order_relaxed);
}

void SetSink(Sink sink) {
  g_sink.store(sink, std::memory_order_release);
}

void Write(Level level, std::string_view component, std::string_view message) {
  if (!Enabled(level) || level == Level::kOff) {
    return;
  }
  Sink sink = g_sink.load(std::memory_order_acquire);
  (sink != nullptr ? sink : StderrSink)(level, component, message.substr(0, 2048));
}

void Printf(Level level, const char* component, const char* format, ...) {
  if (!Enabled(level)) {
    return;
  }
  char message[2048];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (n < 0) {
    return;
  }
  Write(level, component,
        std::string_view(message, std::min<size_t>(static_cast<size_t>(n), sizeof message - 1)));
}

size_t FormatLine(
    char* out, size_t size, Level level, std::string_view component, std::string_view message) {
  if (size == 0) {
    return 0;
  }
  int n =
      std::snprintf(out, size, "ferry %.*s %.*s: %.*s", static_cast<int>(LevelName(level).size()),
                    LevelName(level).data(), static_cast<int>(component.size()), component.data(),
                    static_cast<int>(message.size()), message.data());
  if (n < 0) {
    out[0] = '\0';
    return 0;
  }
  return std::min<size_t>(static_cast<size_t>(n), size - 1);
}

}  // namespace ferry::log
