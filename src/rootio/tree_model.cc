#include "rootio/tree_model.h"

#include <algorithm>

namespace ferry::rootio {

int32_t TreeInfo::FindBranch(std::string_view branch_name) const {
  for (size_t i = 0; i < branches.size(); ++i) {
    if (branches[i].name == branch_name) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

int32_t TreeInfo::FindLeaf(std::string_view leaf_name) const {
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i].name == leaf_name) {
      return static_cast<int32_t>(i);
    }
  }
  int32_t b = FindBranch(leaf_name);
  if (b >= 0 && branches[static_cast<size_t>(b)].leaves.size() == 1) {
    return branches[static_cast<size_t>(b)].leaves[0];
  }
  return -1;
}

std::vector<EntryRange> TreeInfo::Clusters() const {
  // A corrupt header must not make this loop or allocate without bound: past kMaxClusters the
  // remaining entries form one last cluster.
  constexpr size_t kMaxClusters = 1u << 20;
  std::vector<EntryRange> out;
  if (entries <= 0) {
    return out;
  }
  int64_t start = 0;
  auto emit_run = [&](int64_t last, int64_t size) {
    if (size <= 0) {
      size = last - start + 1;
    }
    while (start <= last && out.size() < kMaxClusters) {
      int64_t end = last + 1 - start > size ? start + size : last + 1;
      out.push_back({start, end});
      start = end;
    }
  };
  // Explicit ranges first: range i ends at cluster_range_end[i] (inclusive).
  for (size_t i = 0; i < cluster_range_end.size() && start < entries; ++i) {
    int64_t last = std::min(cluster_range_end[i], entries - 1);
    if (last < start) {
      continue;
    }
    emit_run(last, i < cluster_size.size() ? cluster_size[i] : 0);
  }
  if (start < entries) {
    emit_run(entries - 1, auto_flush > 0 ? auto_flush : 0);
  }
  if (start < entries) {
    out.push_back({start, entries});
  }
  return out;
}

}  // namespace ferry::rootio
