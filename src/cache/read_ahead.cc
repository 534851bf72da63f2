#include "cache/read_ahead.h"

#include <algorithm>
#include <map>

#include "cache/entry.h"

namespace ferry::cache {

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

void ReadAhead::PredictLocked(std::span<const BranchKey> branches,
                              uint32_t tree,
                              int64_t until,
                              std::vector<fetch::Range>& ahead) {
  for (const BranchKey& k : branches) {
    if (k.tree != tree) {
      continue;
    }
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
}

std::vector<std::string> ReadAhead::TreeNames() const {
  std::vector<std::string> names;
  for (const rootio::TreeInfo& t : trees_) {
    names.push_back(t.path.empty() ? t.name : t.path);
  }
  return names;
}

void ReadAhead::Seed(const std::string& tree,
                     const std::vector<std::string>& branches,
                     std::vector<fetch::Range>& ahead) {
  std::lock_guard<std::mutex> lock(mu_);
  if (read_) {
    return;  // the client's own reads lead now
  }
  for (size_t t = 0; t < trees_.size(); ++t) {
    const rootio::TreeInfo& info = trees_[t];
    if ((info.path.empty() ? info.name : info.path) != tree) {
      continue;
    }
    std::vector<BranchKey> keys;
    for (const std::string& name : branches) {
      const int32_t b = info.FindBranch(name);
      if (b >= 0) {
        keys.push_back({static_cast<uint32_t>(t), static_cast<uint32_t>(b)});
      }
    }
    const std::vector<rootio::EntryRange> clusters = info.Clusters();
    if (keys.empty() || clusters.empty()) {
      continue;
    }
    // Two clusters: the client's first vector reads of this file find them; the rest comes
    // from its own reads, so that seeds of files read later do not crowd out the fetches the
    // file being read needs now.
    const size_t seeded = std::min<size_t>({units_, kSeedClusters, clusters.size()});
    const int64_t until = clusters[seeded - 1].end;
    const size_t before = ahead.size();
    PredictLocked(keys, static_cast<uint32_t>(t), until, ahead);
    std::sort(ahead.begin() + static_cast<long>(before), ahead.end(),
              [](const fetch::Range& a, const fetch::Range& b) { return a.offset < b.offset; });
    last_read_ = keys;
  }
}

void ReadAhead::OnRead(std::span<const fetch::Range> chunks,
                       std::vector<fetch::Range>& ahead,
                       std::map<std::string, std::vector<std::string>>* learned) {
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
  read_ = true;
  std::sort(read.begin(), read.end());
  read.erase(std::unique(read.begin(), read.end()), read.end());
  std::vector<BranchKey> both = read;
  both.insert(both.end(), last_read_.begin(), last_read_.end());
  std::sort(both.begin(), both.end());
  both.erase(std::unique(both.begin(), both.end()), both.end());
  if (learned != nullptr && read != last_read_) {
    for (const BranchKey& k : read) {
      const rootio::TreeInfo& info = trees_[k.tree];
      (*learned)[info.path.empty() ? info.name : info.path].push_back(info.branches[k.branch].name);
    }
  }
  last_read_ = std::move(read);

  const size_t before = ahead.size();
  for (const auto& [tree, entries] : span) {
    // Branches of a tree not read now (read before) get no window now.
    const int64_t width = std::max<int64_t>(1, entries.second - entries.first);
    PredictLocked(both, tree, entries.second + static_cast<int64_t>(units_) * width, ahead);
  }
  std::sort(ahead.begin() + static_cast<long>(before), ahead.end(),
            [](const fetch::Range& a, const fetch::Range& b) { return a.offset < b.offset; });
}

void BranchMemory::Learn(const std::string& tree, std::vector<std::string> branches) {
  std::vector<Waiter> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Known& k = known_[tree];
    k.branches = branches;
    k.learned_ns = NowNs();
    auto [first, last] = waiting_.equal_range(tree);
    for (auto it = first; it != last; ++it) {
      wake.push_back(std::move(it->second));
    }
    waiting_.erase(first, last);
  }
  for (Waiter& w : wake) {
    (void)w(branches);
  }
}

std::vector<std::string> BranchMemory::RecallOrWait(const std::string& tree, Waiter waiter) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(tree);
  if (it != known_.end()
      && NowNs() - it->second.learned_ns < kBranchMemorySeconds * 1'000'000'000) {
    return it->second.branches;
  }
  // Waiters of files closed meanwhile are dropped when they are called; bound the list anyway.
  if (waiting_.size() < 100000) {
    waiting_.emplace(tree, std::move(waiter));
  }
  return {};
}

}  // namespace ferry::cache
