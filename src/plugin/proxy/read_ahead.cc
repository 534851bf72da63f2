#include "plugin/proxy/read_ahead.h"

#include <algorithm>
#include <map>

namespace ferry::proxy {

ReadAhead::ReadAhead(std::vector<rootio::TreeInfo> trees, uint32_t units)
    : trees_(std::move(trees)), units_(std::max<uint32_t>(units, 1)) {
  next_.resize(trees_.size());
  for (size_t t = 0; t < trees_.size(); ++t) {
    const auto& branches = trees_[t].branches;
    next_[t].assign(branches.size(), 0);
    for (size_t b = 0; b < branches.size(); ++b) {
      for (size_t i = 0; i < branches[b].baskets.size(); ++i) {
        const rootio::BasketRef& k = branches[b].baskets[i];
        // Embedded baskets live inside the TTree record: nothing to fetch on their own.
        if (k.seek != 0 && k.bytes != 0) {
          by_seek_.push_back({k.seek, k.bytes, static_cast<uint32_t>(t), static_cast<uint32_t>(b),
                              static_cast<uint32_t>(i)});
        }
      }
    }
  }
  std::sort(by_seek_.begin(), by_seek_.end(),
            [](const BasketAt& a, const BasketAt& b) { return a.seek < b.seek; });
}

const ReadAhead::BasketAt* ReadAhead::Find(uint64_t offset) const {
  auto it = std::upper_bound(by_seek_.begin(), by_seek_.end(), offset,
                             [](uint64_t off, const BasketAt& b) { return off < b.seek; });
  if (it == by_seek_.begin()) {
    return nullptr;
  }
  --it;
  return offset < it->seek + it->bytes ? &*it : nullptr;
}

void ReadAhead::OnRead(std::span<const fetch::Range> chunks, std::vector<fetch::Range>& ahead) {
  std::lock_guard<std::mutex> lock(mu_);
  // Branches read now and the entries they cover, per tree.
  std::vector<BranchKey> read;
  std::map<uint32_t, std::pair<int64_t, int64_t>> span;  // tree -> [first, end) entries
  for (const fetch::Range& c : chunks) {
    // A chunk may hold several adjacent baskets (a client that merged them): walk them all.
    for (uint64_t pos = c.offset; pos < c.end();) {
      const BasketAt* b = Find(pos);
      if (b == nullptr) {
        break;
      }
      const rootio::BasketRef& ref = trees_[b->tree].branches[b->branch].baskets[b->index];
      read.push_back({b->tree, b->branch});
      uint32_t& next = next_[b->tree][b->branch];
      next = std::max(next, b->index + 1);
      auto [it, added] =
          span.try_emplace(b->tree, ref.first_entry, ref.first_entry + ref.num_entries);
      if (!added) {
        it->second.first = std::min(it->second.first, ref.first_entry);
        it->second.second = std::max(it->second.second, ref.first_entry + ref.num_entries);
      }
      pos = b->seek + b->bytes;
    }
  }
  if (read.empty()) {
    return;
  }
  std::sort(read.begin(), read.end());
  read.erase(std::unique(read.begin(), read.end()), read.end());
  std::vector<BranchKey> learned = read;
  learned.insert(learned.end(), last_read_.begin(), last_read_.end());
  std::sort(learned.begin(), learned.end());
  learned.erase(std::unique(learned.begin(), learned.end()), learned.end());
  last_read_ = std::move(read);

  const size_t before = ahead.size();
  for (const BranchKey& k : learned) {
    auto s = span.find(k.tree);
    if (s == span.end()) {
      continue;  // a branch of another tree, read before: no window for it now
    }
    const int64_t width = std::max<int64_t>(1, s->second.second - s->second.first);
    const int64_t until = s->second.second + static_cast<int64_t>(units_) * width;
    const auto& baskets = trees_[k.tree].branches[k.branch].baskets;
    uint32_t& next = next_[k.tree][k.branch];
    while (next < baskets.size() && baskets[next].first_entry < until) {
      const rootio::BasketRef& ref = baskets[next];
      if (ref.seek != 0 && ref.bytes != 0) {
        ahead.push_back({ref.seek, ref.bytes});
      }
      ++next;
    }
  }
  std::sort(ahead.begin() + static_cast<long>(before), ahead.end(),
            [](const fetch::Range& a, const fetch::Range& b) { return a.offset < b.offset; });
}

}  // namespace ferry::proxy
