#include "cli/cache_access.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "plugin/proxy/access_log.h"

namespace ferry::cli {
namespace {

// The status file as written by the proxy (one JSON object), "" when absent.
std::string StatusText(const std::string& dir) {
  std::ifstream in(dir + "/proxy-status.json");
  if (!in) {
    return "";
  }
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  // Only a whole object is passed on (the proxy renames it into place, so it always is).
  return text.size() >= 2 && text.front() == '{' && text.back() == '}' ? text : "";
}

std::string Human(uint64_t bytes) {
  return HumanBytes(static_cast<double>(bytes));
}

}  // namespace

void WriteProxyStatsJson(JsonWriter& w, const std::string& dir) {
  auto s = proxy::SummariseAccessLog(dir);
  if (s && s->records + s->bad_lines > 0) {
    w.Key("access").BeginObject();
    w.Field("records", s->records).Field("files", s->files).Field("reads", s->reads);
    w.Field("bytes_read", s->bytes_read).Field("bytes_hit", s->bytes_hit);
    w.Field("bytes_missed", s->bytes_missed).Field("bytes_bypassed", s->bytes_bypassed);
    w.Field("bytes_prefetched", s->bytes_prefetched).Field("origin_bytes", s->origin_bytes);
    w.Field("origin_requests", s->origin_requests).Field("bad_lines", s->bad_lines);
    w.Field("first_open_unix", s->first_open_unix).Field("last_close_unix", s->last_close_unix);
    w.EndObject();
  }
  if (const std::string status = StatusText(dir); !status.empty()) {
    w.Key("proxy").Raw(status);
  }
}

void PrintProxyStats(const std::string& dir) {
  auto s = proxy::SummariseAccessLog(dir);
  if (s && s->records > 0) {
    std::printf(
        "access:    %llu file closes (%llu files): %s read, %s hit, %s missed, %s "
        "bypassed, %s prefetched; %s in %llu origin requests\n",
        static_cast<unsigned long long>(s->records), static_cast<unsigned long long>(s->files),
        Human(s->bytes_read).c_str(), Human(s->bytes_hit).c_str(), Human(s->bytes_missed).c_str(),
        Human(s->bytes_bypassed).c_str(), Human(s->bytes_prefetched).c_str(),
        Human(s->origin_bytes).c_str(), static_cast<unsigned long long>(s->origin_requests));
  }
  if (const std::string status = StatusText(dir); !status.empty()) {
    std::printf("proxy:     %s\n", status.c_str());
  }
}

}  // namespace ferry::cli
