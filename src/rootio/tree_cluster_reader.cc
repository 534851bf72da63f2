#include "rootio/tree_cluster_reader.h"

#include <algorithm>
#include <string>

#include "rootio/dataset_impl.h"

namespace ferry::rootio {
namespace {

std::string RangeText(const EntryRange& r) {
  return "entries [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")";
}

}  // namespace

Result<TreeClusterReader> TreeClusterReader::Make(const Tree& tree,
                                                  std::span<const std::string> leaves,
                                                  const ClusterReaderOptions& options) {
  TreeClusterReader r;
  r.tree_ = &tree;
  r.options_ = options;
  if (r.options_.max_ranges_per_read == 0) {
    r.options_.max_ranges_per_read = 1;
  }
  const TreeInfo& info = tree.info();
  for (const std::string& name : leaves) {
    int32_t leaf = info.FindLeaf(name);
    if (leaf < 0) {
      return NotFoundError("tree " + info.name + " has no leaf or branch '" + name + "'");
    }
    FERRY_TRY(tree.CheckReadable(leaf));
    if (std::find(r.leaves_.begin(), r.leaves_.end(), leaf) == r.leaves_.end()) {
      r.leaves_.push_back(leaf);
    }
  }
  // Counter leaves of jagged leaves join the active set.
  const size_t requested = r.leaves_.size();
  for (size_t i = 0; i < requested; ++i) {
    const Leaf& l = info.leaves[static_cast<size_t>(r.leaves_[i])];
    if (l.jagged()
        && std::find(r.leaves_.begin(), r.leaves_.end(), l.count_leaf) == r.leaves_.end()) {
      FERRY_TRY_CTX(tree.CheckReadable(l.count_leaf), "counter of " + l.name);
      r.leaves_.push_back(l.count_leaf);
    }
  }
  r.counter_column_.assign(r.leaves_.size(), -1);
  for (size_t i = 0; i < r.leaves_.size(); ++i) {
    const Leaf& l = info.leaves[static_cast<size_t>(r.leaves_[i])];
    if (l.jagged()) {
      auto it = std::find(r.leaves_.begin(), r.leaves_.end(), l.count_leaf);
      r.counter_column_[i] = static_cast<int>(it - r.leaves_.begin());
    }
  }
  // Active branches: those of counter leaves first, so counters are decoded before the jagged
  // leaves that may need them.
  auto add_branch = [&r, &info](size_t column) {
    int32_t b = info.leaves[static_cast<size_t>(r.leaves_[column])].branch;
    auto it = std::find(r.branches_.begin(), r.branches_.end(), b);
    if (it == r.branches_.end()) {
      r.branches_.push_back(b);
      r.branch_columns_.push_back({column});
    } else {
      r.branch_columns_[static_cast<size_t>(it - r.branches_.begin())].push_back(column);
    }
  };
  std::vector<bool> is_counter(r.leaves_.size(), false);
  for (int c : r.counter_column_) {
    if (c >= 0) {
      is_counter[static_cast<size_t>(c)] = true;
    }
  }
  for (size_t i = 0; i < r.leaves_.size(); ++i) {
    if (is_counter[i]) {
      add_branch(i);
    }
  }
  for (size_t i = 0; i < r.leaves_.size(); ++i) {
    if (!is_counter[i]) {
      add_branch(i);
    }
  }
  FERRY_TRY(r.Plan());
  return r;
}

Status TreeClusterReader::Plan() {
  const TreeInfo& info = tree_->info();
  const std::vector<EntryRange> clusters = info.Clusters();
  if (clusters.empty()) {
    return OkStatus();
  }
  // Candidate unit starts: cluster starts. A start strictly inside a basket of an active
  // branch is dropped (difference array over the candidates), so baskets never straddle units.
  std::vector<int64_t> starts;
  starts.reserve(clusters.size());
  for (const EntryRange& c : clusters) {
    starts.push_back(c.begin);
  }
  std::vector<int64_t> inside(starts.size() + 1, 0);
  for (int32_t b : branches_) {
    for (const BasketRef& ref : info.branches[static_cast<size_t>(b)].baskets) {
      const int64_t lo = ref.first_entry;
      const int64_t hi = ref.first_entry + ref.num_entries;
      auto k1 = std::upper_bound(starts.begin(), starts.end(), lo) - starts.begin();
      auto k2 = std::lower_bound(starts.begin(), starts.end(), hi) - starts.begin();
      if (k1 < k2) {
        ++inside[static_cast<size_t>(k1)];
        --inside[static_cast<size_t>(k2)];
      }
    }
  }
  std::vector<EntryRange> ranges;
  int64_t depth = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    depth += inside[k];
    if (k == 0 || depth == 0) {
      if (!ranges.empty()) {
        ranges.back().end = starts[k];
      }
      ranges.push_back({starts[k], info.entries});
    }
  }

  units_.resize(ranges.size());
  for (size_t u = 0; u < ranges.size(); ++u) {
    units_[u].entries = ranges[u];
  }
  // Assign baskets to units: one walk per branch (baskets are in entry order in ROOT files;
  // a branch whose baskets are not falls back to a search per unit).
  for (int32_t b : branches_) {
    const std::vector<BasketRef>& baskets = info.branches[static_cast<size_t>(b)].baskets;
    bool sorted = true;
    for (size_t i = 1; i < baskets.size(); ++i) {
      sorted = sorted && baskets[i - 1].first_entry <= baskets[i].first_entry;
    }
    size_t next = 0;
    for (ReadUnit& unit : units_) {
      std::vector<size_t> in_unit;
      if (sorted) {
        while (next < baskets.size() && baskets[next].first_entry < unit.entries.end) {
          const BasketRef& ref = baskets[next];
          if (ref.num_entries > 0 && ref.first_entry + ref.num_entries > unit.entries.begin) {
            in_unit.push_back(next);
          }
          ++next;
        }
      } else {
        in_unit = tree_->BasketsOverlapping(b, unit.entries);
      }
      for (size_t i : in_unit) {
        const BasketRef& ref = baskets[i];
        BasketSlot slot;
        slot.branch = b;
        slot.basket = i;
        slot.embedded = ref.embedded >= 0;
        if (!slot.embedded) {
          slot.buffer_offset = unit.bytes;
          slot.bytes = ref.bytes;
          unit.bytes += ref.bytes;
          ++unit.ranges;
        }
        unit.baskets.push_back(slot);
      }
    }
  }
  for (const ReadUnit& unit : units_) {
    bytes_ += unit.bytes;
    ranges_ += unit.ranges;
  }
  return OkStatus();
}

int TreeClusterReader::ColumnOf(std::string_view leaf_name) const {
  int32_t leaf = tree_->info().FindLeaf(leaf_name);
  auto it = std::find(leaves_.begin(), leaves_.end(), leaf);
  return leaf < 0 || it == leaves_.end() ? -1 : static_cast<int>(it - leaves_.begin());
}

Status TreeClusterReader::Fetch(size_t unit_index, ByteVector* buffer) const {
  const ReadUnit& unit = units_[unit_index];
  buffer->resize(unit.bytes);
  std::vector<io::ReadRequest> requests;
  std::vector<const BasketSlot*> slots;
  requests.reserve(unit.ranges);
  slots.reserve(unit.ranges);
  for (const BasketSlot& slot : unit.baskets) {
    if (slot.embedded) {
      continue;
    }
    const BasketRef& ref =
        tree_->info().branches[static_cast<size_t>(slot.branch)].baskets[slot.basket];
    io::ReadRequest req;
    req.offset = ref.seek;
    req.dest = std::span<uint8_t>(buffer->data() + slot.buffer_offset, slot.bytes);
    requests.push_back(std::move(req));
    slots.push_back(&slot);
  }
  io::ByteSource& source = tree_->source();
  const size_t step = options_.max_ranges_per_read;
  for (size_t first = 0; first < requests.size(); first += step) {
    const size_t n = std::min(step, requests.size() - first);
    std::span<io::ReadRequest> batch(requests.data() + first, n);
    Status st = source.ReadV(batch);
    if (st.has_value()) {
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      if (!batch[i].status.has_value()) {
        const BasketSlot& slot = *slots[first + i];
        const Branch& br = tree_->info().branches[static_cast<size_t>(slot.branch)];
        return std::move(batch[i].status)
            .error()
            .AddContext("branch " + br.name + " > basket " + std::to_string(slot.basket))
            .AddContext(RangeText(unit.entries));
      }
    }
    return std::move(st).error().AddContext(RangeText(unit.entries));
  }
  return OkStatus();
}

Status TreeClusterReader::Decode(size_t unit_index,
                                 std::span<const uint8_t> buffer,
                                 BasketDecoder* decoder,
                                 std::vector<Column>* columns) const {
  const ReadUnit& unit = units_[unit_index];
  const TreeInfo& info = tree_->info();
  if (buffer.size() < unit.bytes) {
    return InvalidArgumentError("buffer of " + std::to_string(buffer.size())
                                + " bytes for a unit of " + std::to_string(unit.bytes));
  }
  columns->resize(leaves_.size());
  for (size_t c = 0; c < leaves_.size(); ++c) {
    tree_->StartColumn(leaves_[c], unit.entries.begin, &(*columns)[c]);  // keeps capacity
  }
  size_t branch_pos = 0;
  Column counts;
  for (const BasketSlot& slot : unit.baskets) {
    while (branches_[branch_pos] != slot.branch) {
      ++branch_pos;  // slots are branch-major in branches_ order
    }
    const Branch& br = info.branches[static_cast<size_t>(slot.branch)];
    const BasketRef& ref = br.baskets[slot.basket];
    BasketView view;
    if (slot.embedded) {
      view = BasketDecoder::View(br.embedded[static_cast<size_t>(ref.embedded)]);
    } else {
      view = FERRY_TRY_CTX(decoder->Decode(buffer.subspan(slot.buffer_offset, slot.bytes)),
                           "branch " + br.name + " > basket " + std::to_string(slot.basket));
    }
    for (size_t c : branch_columns_[branch_pos]) {
      const int32_t leaf = leaves_[c];
      const Column* counts_ptr = nullptr;
      if (counter_column_[c] >= 0 && view.offsets.empty()) {
        // The counter's values for exactly this basket's entries (decoded earlier: counter
        // branches come first, and the basket lies inside the unit).
        const Column& all = (*columns)[static_cast<size_t>(counter_column_[c])];
        const size_t size = all.value_size();
        const int64_t skip = ref.first_entry - all.first_entry;
        if (skip < 0 || skip + ref.num_entries > all.num_entries || size == 0) {
          return CorruptionError("counter values do not cover basket " + std::to_string(slot.basket)
                                 + " of branch " + br.name);
        }
        counts.type = all.type;
        counts.first_entry = ref.first_entry;
        counts.num_entries = ref.num_entries;
        counts.jagged = false;
        counts.fixed_len = 1;
        const auto b0 =
            all.bytes.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(skip) * size);
        counts.bytes.assign(
            b0, b0 + static_cast<ptrdiff_t>(static_cast<size_t>(ref.num_entries) * size));
        counts_ptr = &counts;
      }
      FERRY_TRY_CTX(
          tree_->AppendFromBasket(leaf, view, ref, unit.entries, counts_ptr, &(*columns)[c]),
          "branch " + br.name + " > basket " + std::to_string(slot.basket));
    }
  }
  for (size_t c = 0; c < leaves_.size(); ++c) {
    if ((*columns)[c].num_entries != unit.entries.size()) {
      return CorruptionError("leaf " + info.leaves[static_cast<size_t>(leaves_[c])].name
                             + ": baskets cover " + std::to_string((*columns)[c].num_entries)
                             + " of the " + std::to_string(unit.entries.size()) + " entries of "
                             + RangeText(unit.entries));
    }
  }
  return OkStatus();
}

Status TreeClusterReader::Decode(size_t unit,
                                 std::span<const uint8_t> buffer,
                                 DatasetScratch* scratch,
                                 std::vector<Column>* columns) const {
  return Decode(unit, buffer, &scratch->parts().decoder, columns);
}

}  // namespace ferry::rootio
