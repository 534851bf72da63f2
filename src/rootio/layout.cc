#include "rootio/layout.h"

#include "rootio/root_file.h"
#include "rootio/tree.h"

namespace ferry::rootio {

int32_t LayoutSet::FindColumn(std::string_view column) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == column) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

LayoutSet TreeLayout(const TreeInfo& tree) {
  LayoutSet set;
  set.name = tree.path.empty() ? tree.name : tree.path;
  set.entries = tree.entries;
  set.clusters = tree.Clusters();
  set.columns.reserve(tree.branches.size());
  for (const Branch& b : tree.branches) {
    LayoutColumn& column = set.columns.emplace_back();
    column.name = b.name;
    column.units.reserve(b.baskets.size());
    for (const BasketRef& k : b.baskets) {
      // An embedded basket lives inside the TTree record: nothing to fetch on its own.
      if (k.seek != 0 && k.bytes != 0) {
        column.units.push_back({k.seek, k.bytes, k.first_entry, k.num_entries});
      }
    }
  }
  return set;
}

Result<std::vector<LayoutSet>> LoadLayout(RootFile& file) {
  std::vector<LayoutSet> sets;
  for (const std::string& path : FERRY_TRY(file.TreePaths())) {
    if (auto tree = file.OpenTree(path)) {
      sets.push_back(TreeLayout((*tree)->info()));
    }
  }
  return sets;
}

}  // namespace ferry::rootio
