#include "readahead/open_sequence.h"

#include <algorithm>

namespace ferry::readahead {

std::vector<std::string> OpenSequence::OnOpen(const std::string& dir,
                                              const std::string& name,
                                              const std::vector<std::string>& listing) {
  Dir& d = dirs_[dir];
  // The predictions this open settles: the one it takes is used, those it skipped are wasted;
  // an open that takes none wastes them all (the reader left the sequence).
  bool took = false;
  if (!d.pending.empty()) {
    const auto hit = std::find(d.pending.begin(), d.pending.end(), name);
    took = hit != d.pending.end();
    const auto skipped = static_cast<uint64_t>(hit - d.pending.begin());
    d.used += took ? 1 : 0;
    used_ += took ? 1 : 0;
    d.wasted += skipped;
    wasted_ += skipped;
    d.pending.erase(d.pending.begin(), took ? hit + 1 : hit);
  }
  auto it = std::lower_bound(listing.begin(), listing.end(), name);
  if (it == listing.end() || *it != name) {
    d.last = -1;  // not in the listing (or no listing yet): no sequence to follow
    d.finished = false;
    last_dir_ = dir;
    return {};
  }
  const long at = it - listing.begin();
  const bool first = at == 0 && d.last < 0 && d.used + d.wasted == 0;
  const bool follows = took || (d.last >= 0 && at == d.last + 1) || (first && GoesOn(dir, d));
  // A directory's first name opened first: a bet that a chain starts.
  const size_t depth = follows ? d.depth : first ? kFirstBet : 0;
  d.last = at;
  d.finished = took && it + 1 == listing.end();
  last_dir_ = dir;
  if (depth == 0 || d.wasted >= d.used + kMaxWastedLead) {
    return {};
  }
  std::vector<std::string> fresh;
  const size_t end = std::min(listing.size(), static_cast<size_t>(at) + 1 + depth);
  for (size_t i = static_cast<size_t>(at) + 1; i < end; ++i) {
    if (std::find(d.pending.begin(), d.pending.end(), listing[i]) == d.pending.end()) {
      d.pending.push_back(listing[i]);
      fresh.push_back(listing[i]);
    }
  }
  predicted_ += fresh.size();
  return fresh;
}

bool OpenSequence::GoesOn(const std::string& dir, Dir& d) {
  if (last_dir_ == dir) {
    return false;
  }
  auto prev = dirs_.find(last_dir_);
  if (prev == dirs_.end() || !prev->second.finished) {
    return false;
  }
  d.depth = prev->second.depth;
  return true;
}

void OpenSequence::CaughtUp(const std::string& dir) {
  Dir& d = dirs_[dir];
  d.depth = std::min(kMaxDepth, 2 * d.depth);
}

void OpenSequence::Expired(const std::string& dir, const std::string& name) {
  Dir& d = dirs_[dir];
  d.depth = std::max(kMinDepth, d.depth / 2);
  std::erase(d.pending, name);
}

size_t OpenSequence::depth(const std::string& dir) const {
  auto it = dirs_.find(dir);
  return it == dirs_.end() ? kMinDepth : it->second.depth;
}

}  // namespace ferry::readahead
