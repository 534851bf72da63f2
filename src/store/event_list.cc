#include "store/event_list.h"

#include <string>

namespace ferry::store {

Result<std::vector<EventId>> ParseEventList(std::string_view text) {
  std::vector<EventId> ids;
  int n = 0;
  while (!text.empty()) {
    ++n;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line = line.substr(0, line.find('#'));
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string_view::npos) {
      continue;
    }
    const size_t b = line.find_last_not_of(" \t\r");
    auto id = ParseEventId(line.substr(a, b - a + 1));
    if (!id) {
      return std::move(id).error().AddContext("line " + std::to_string(n));
    }
    ids.push_back(*id);
  }
  return ids;
}

}  // namespace ferry::store
