#include "readahead/open_sequence.h"

#include <algorithm>

namespace ferry::readahead {

std::optional<std::string> OpenSequence::OnOpen(const std::string& dir,
                                                const std::string& name,
                                                const std::vector<std::string>& listing) {
  Dir& d = dirs_[dir];
  if (!d.pending.empty()) {
    const bool taken = d.pending == name;
    d.used += taken ? 1 : 0;
    d.wasted += taken ? 0 : 1;
    used_ += taken ? 1 : 0;
    wasted_ += taken ? 0 : 1;
    d.pending.clear();
  }
  auto it = std::lower_bound(listing.begin(), listing.end(), name);
  if (it == listing.end() || *it != name) {
    d.last = -1;  // not in the listing (or no listing yet): no sequence to follow
    return std::nullopt;
  }
  const long at = it - listing.begin();
  const bool follows = d.last >= 0 && at == d.last + 1;
  d.last = at;
  if (!follows || d.wasted >= d.used + kMaxWastedLead
      || static_cast<size_t>(at + 1) >= listing.size()) {
    return std::nullopt;
  }
  d.pending = listing[static_cast<size_t>(at + 1)];
  ++predicted_;
  return d.pending;
}

}  // namespace ferry::readahead
