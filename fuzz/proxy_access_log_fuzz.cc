// Fuzz target: the site proxy's access log (plugin/proxy/access_log.h), one JSON line per closed
// file, appended by every xrootd process of the proxy and read by `ferry cache stats`; a crash
// leaves a torn last line. Input: log text; each line is parsed. A line that parses must write
// back (AccessRecordJson) to a line that parses to the same record.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "plugin/proxy/access_log.h"

using namespace ferry::proxy;

namespace {

bool Same(const AccessRecord& a, const AccessRecord& b) {
  // Bitwise for the times: %.17g reproduces a finite double exactly.
  return a.path == b.path && a.user == b.user && a.size == b.size
         && std::memcmp(&a.open_unix, &b.open_unix, sizeof(double)) == 0
         && std::memcmp(&a.close_unix, &b.close_unix, sizeof(double)) == 0 && a.reads == b.reads
         && a.bytes_read == b.bytes_read && a.bytes_hit == b.bytes_hit
         && a.bytes_missed == b.bytes_missed && a.bytes_bypassed == b.bytes_bypassed
         && a.bytes_prefetched == b.bytes_prefetched && a.origin_bytes == b.origin_bytes
         && a.origin_requests == b.origin_requests;
}

void CheckLine(std::string_view line) {
  auto r = ParseAccessRecord(line);
  if (!r.has_value()) {
    return;
  }
  const std::string again = AccessRecordJson(*r);
  auto back = ParseAccessRecord(again);
  if (again.find('\n') != std::string::npos || !back.has_value() || !Same(*back, *r)) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    CheckLine(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return 0;
}
