#include "readahead/read_ahead.h"

#include <algorithm>
#include <map>
#include <queue>

#include "base/clock.h"

namespace ferry::readahead {

ReadAhead::ReadAhead(std::vector<rootio::LayoutSet> sets, uint32_t units)
    : trees_(std::move(sets)), units_(std::max<uint32_t>(units, 1)) {
  state_.resize(trees_.size());
  active_.resize(trees_.size());
  frontier_.assign(trees_.size(), 0);
  size_t flags = 0;
  for (size_t t = 0; t < trees_.size(); ++t) {
    const auto& columns = trees_[t].columns;
    state_[t].resize(columns.size());
    for (size_t b = 0; b < columns.size(); ++b) {
      state_[t][b].flags = flags;
      flags += columns[b].units.size();
      for (size_t i = 0; i < columns[b].units.size(); ++i) {
        const rootio::LayoutUnit& k = columns[b].units[i];
        by_seek_.push_back({k.offset, k.bytes, static_cast<uint32_t>(t), static_cast<uint32_t>(b),
                            static_cast<uint32_t>(i)});
      }
    }
  }
  flags_.assign(flags, 0);
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

std::string ReadAhead::TreeName(uint32_t tree) const {
  return trees_[tree].name;
}

std::vector<std::string> ReadAhead::TreeNames() const {
  std::vector<std::string> names;
  for (uint32_t t = 0; t < trees_.size(); ++t) {
    names.push_back(TreeName(t));
  }
  return names;
}

size_t ReadAhead::pending() const {
  MutexLock lock(mu_);
  return pending_;
}

void ReadAhead::StaleBelow(uint32_t tree,
                           uint32_t b,
                           uint64_t below,
                           std::vector<fetch::Range>* stale) {
  BranchState& st = State(tree, b);
  const auto& baskets = trees_[tree].columns[b].units;
  const uint64_t end = std::min<uint64_t>(below, st.next);
  for (uint64_t i = st.oldest_flag; i < end; ++i) {
    uint8_t& flag = flags_[st.flags + i];
    if (flag != 0) {
      flag = 0;
      --pending_;
      if (stale != nullptr) {
        stale->push_back({baskets[i].offset, baskets[i].bytes});
      }
    }
  }
  st.oldest_flag = static_cast<uint32_t>(std::max<uint64_t>(st.oldest_flag, end));
}

void ReadAhead::Emit(uint32_t tree, uint32_t b, std::vector<fetch::Range>& out, uint64_t* bytes) {
  BranchState& st = State(tree, b);
  const rootio::LayoutUnit& ref = trees_[tree].columns[b].units[st.next];
  out.push_back({ref.offset, ref.bytes});
  flags_[st.flags + st.next] = 1;
  ++pending_;
  if (bytes != nullptr) {
    *bytes += ref.bytes;
  }
  ++st.next;
}

void ReadAhead::PredictUntil(uint32_t tree,
                             std::span<const uint32_t> branches,
                             int64_t until,
                             std::vector<fetch::Range>& ahead) {
  for (uint32_t b : branches) {
    const auto& baskets = trees_[tree].columns[b].units;
    while (State(tree, b).next < baskets.size()
           && baskets[State(tree, b).next].first_entry < until) {
      Emit(tree, b, ahead, nullptr);
    }
  }
}

ReadAhead::Observation ReadAhead::ObserveLocked(
    std::span<const fetch::Range> chunks,
    std::vector<fetch::Range>* used,
    std::vector<fetch::Range>* stale,
    std::map<std::string, std::vector<std::string>>* learned,
    std::map<uint32_t, std::pair<int64_t, int64_t>>& spans) {
  Observation obs;
  bool first_at_zero = false;
  // Branches read now, per tree (small: the branches of one read).
  std::map<uint32_t, std::vector<uint32_t>> read;
  for (const fetch::Range& c : chunks) {
    // A chunk may hold several adjacent baskets (a reader that merged them): walk them all.
    for (uint64_t pos = c.offset; pos < c.end();) {
      const BasketAt* at = Find(pos);
      if (at == nullptr) {
        break;
      }
      pos = at->seek + at->bytes;
      const rootio::LayoutUnit& ref = trees_[at->tree].columns[at->branch].units[at->index];
      BranchState& st = State(at->tree, at->branch);
      ++obs.baskets;
      obs.bytes += at->bytes;
      uint8_t& flag = flags_[st.flags + at->index];
      const bool was_predicted = flag != 0;
      if (was_predicted) {
        flag = 0;
        --pending_;
        ++obs.used;
        if (used != nullptr) {
          used->push_back({at->seek, at->bytes});
        }
      }
      const int64_t i = at->index;
      // In sequence: near the next basket of its branch; for a branch not read before, the
      // start of the tree or where the tree's reading has got to (a branch added to the set).
      const int64_t frontier = frontier_[at->tree];
      const bool near_next =
          st.last >= 0 ? i + static_cast<int64_t>(kReorderSlack) > st.last
                             && i <= st.last + 1 + kReorderSlack
                       : ref.first_entry == 0
                             || (ref.first_entry <= frontier && frontier <= ref.end_entry());
      obs.in_sequence = obs.in_sequence || was_predicted || near_next;
      first_at_zero = first_at_zero || (st.last < 0 && ref.first_entry == 0);
      // Predictions this branch went past (beyond the reorder slack) will not be read.
      if (at->index > kReorderSlack) {
        StaleBelow(at->tree, at->branch, at->index - kReorderSlack, stale);
      }
      st.last = std::max(st.last, i);
      st.read_end = std::max(st.read_end, ref.end_entry());
      st.next = std::max(st.next, at->index + 1);
      read[at->tree].push_back(at->branch);
      auto [it, added] = spans.try_emplace(at->tree, ref.first_entry, ref.end_entry());
      if (!added) {
        it->second.first = std::min(it->second.first, ref.first_entry);
        it->second.second = std::max(it->second.second, ref.end_entry());
      }
    }
  }
  if (obs.baskets == 0) {
    return obs;
  }
  read_ = true;
  size_t branches_read = 0;
  for (auto& [tree, branches] : read) {
    std::sort(branches.begin(), branches.end());
    branches.erase(std::unique(branches.begin(), branches.end()), branches.end());
    branches_read += branches.size();
  }
  obs.from_start = first_at_zero && branches_read >= 2;
  for (const auto& [tree, entries] : spans) {
    frontier_[tree] = std::max(frontier_[tree], entries.second);
  }
  for (auto& [tree, branches] : read) {
    // Active: read now, or read up to where this read begins (the same entries, branch by
    // branch); the others stopped being read and their predictions will not be used.
    const int64_t e0 = spans[tree].first;
    std::vector<uint32_t> active = branches;
    for (uint32_t b : active_[tree]) {
      if (State(tree, b).read_end >= e0) {
        active.push_back(b);
      } else {
        StaleBelow(tree, b, UINT64_MAX, stale);
      }
    }
    std::sort(active.begin(), active.end());
    active.erase(std::unique(active.begin(), active.end()), active.end());
    if (active != active_[tree] && learned != nullptr) {
      std::vector<std::string>& names = (*learned)[TreeName(tree)];
      for (uint32_t b : active) {
        names.push_back(trees_[tree].columns[b].name);
      }
    }
    active_[tree] = std::move(active);
  }
  return obs;
}

ReadAhead::Observation ReadAhead::Observe(
    std::span<const fetch::Range> chunks,
    std::vector<fetch::Range>& used,
    std::vector<fetch::Range>& stale,
    std::map<std::string, std::vector<std::string>>* learned) {
  MutexLock lock(mu_);
  std::map<uint32_t, std::pair<int64_t, int64_t>> spans;
  return ObserveLocked(chunks, &used, &stale, learned, spans);
}

uint64_t ReadAhead::Predict(uint64_t max_bytes, std::vector<fetch::Range>& out) {
  MutexLock lock(mu_);
  uint64_t bytes = 0;
  for (uint32_t t = 0; t < trees_.size() && bytes < max_bytes; ++t) {
    // Merge the active branches' next baskets by first entry (then by position in the file).
    using Head = std::pair<std::pair<int64_t, uint64_t>, uint32_t>;
    std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
    auto push = [&](uint32_t b) FERRY_REQUIRES(mu_) {
      const auto& baskets = trees_[t].columns[b].units;
      const uint32_t next = State(t, b).next;
      if (next < baskets.size()) {
        heads.push({{baskets[next].first_entry, baskets[next].offset}, b});
      }
    };
    for (uint32_t b : active_[t]) {
      push(b);
    }
    while (!heads.empty() && bytes < max_bytes) {
      const uint32_t b = heads.top().second;
      heads.pop();
      Emit(t, b, out, &bytes);
      push(b);
    }
  }
  return bytes;
}

void ReadAhead::OnRead(std::span<const fetch::Range> chunks,
                       std::vector<fetch::Range>& ahead,
                       std::map<std::string, std::vector<std::string>>* learned) {
  MutexLock lock(mu_);
  std::map<uint32_t, std::pair<int64_t, int64_t>> spans;
  const Observation obs = ObserveLocked(chunks, nullptr, nullptr, learned, spans);
  if (obs.baskets == 0) {
    return;
  }
  const size_t before = ahead.size();
  for (const auto& [tree, entries] : spans) {
    const int64_t width = std::max<int64_t>(1, entries.second - entries.first);
    PredictUntil(tree, active_[tree], entries.second + static_cast<int64_t>(units_) * width, ahead);
  }
  std::sort(ahead.begin() + static_cast<long>(before), ahead.end(),
            [](const fetch::Range& a, const fetch::Range& b) { return a.offset < b.offset; });
}

void ReadAhead::Seed(const std::string& tree,
                     const std::vector<std::string>& branches,
                     std::vector<fetch::Range>& ahead) {
  MutexLock lock(mu_);
  if (read_) {
    return;  // the reader's own reads lead now
  }
  for (uint32_t t = 0; t < trees_.size(); ++t) {
    if (TreeName(t) != tree) {
      continue;
    }
    const rootio::LayoutSet& info = trees_[t];
    std::vector<uint32_t> keys;
    for (const std::string& name : branches) {
      const int32_t b = info.FindColumn(name);
      if (b >= 0) {
        keys.push_back(static_cast<uint32_t>(b));
      }
    }
    const std::vector<rootio::EntryRange>& clusters = info.clusters;
    if (keys.empty() || clusters.empty()) {
      continue;
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    // Two clusters: the reader's first reads of this file find them; the rest comes from its
    // own reads, so that seeds of files read later do not crowd out the fetches the file being
    // read needs now.
    const auto seeded = std::min<size_t>({units_, kSeedClusters, clusters.size()});
    const int64_t until = clusters[seeded - 1].end;
    const size_t before = ahead.size();
    PredictUntil(t, keys, until, ahead);
    std::sort(ahead.begin() + static_cast<long>(before), ahead.end(),
              [](const fetch::Range& a, const fetch::Range& b) { return a.offset < b.offset; });
    // Seeded branches count as read up to entry 0: the first read continues them.
    for (uint32_t b : keys) {
      State(t, b).read_end = std::max<int64_t>(State(t, b).read_end, 0);
    }
    active_[t] = std::move(keys);
  }
}

void BranchMemory::Learn(const std::string& tree, const std::vector<std::string>& branches) {
  std::vector<Waiter> wake;
  {
    MutexLock lock(mu_);
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
  MutexLock lock(mu_);
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

}  // namespace ferry::readahead
