#include "rootio/layout.h"

#include <limits>

#include "rootio/rntuple.h"
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

namespace {

// The column names of RntupleLayout: the field's path, "#k" added where a field has several.
std::vector<std::string> RntupleColumnNames(const Rntuple& ntuple) {
  const std::vector<ColumnRecord>& columns = ntuple.columns();
  std::vector<uint32_t> per_field(ntuple.fields().size(), 0);
  for (const ColumnRecord& c : columns) {
    ++per_field[c.field_id];
  }
  std::vector<uint32_t> seen(per_field.size(), 0);
  std::vector<std::string> names;
  names.reserve(columns.size());
  for (const ColumnRecord& c : columns) {
    std::string name = ntuple.FieldPath(c.field_id);
    const uint32_t k = seen[c.field_id]++;
    if (per_field[c.field_id] > 1) {
      name += "#" + std::to_string(k);
    }
    names.push_back(std::move(name));
  }
  return names;
}

// The entries of a cluster of `entries` before element `element` of a column with `elements`
// in it, rounded down (exact when the product fits 64 bits, as it does for real files).
int64_t EntryAt(uint64_t element, uint64_t elements, uint64_t entries) {
  if (elements == 0) {
    return 0;
  }
  uint64_t product = 0;
  if (!__builtin_mul_overflow(element, entries, &product)) {
    return static_cast<int64_t>(product / elements);
  }
  return static_cast<int64_t>(static_cast<long double>(element) * static_cast<long double>(entries)
                              / static_cast<long double>(elements));
}

// The pages of one column in one cluster as units over the cluster's entries.
void AddClusterPages(const ClusterInfo& cluster, const ColumnPages& pages, LayoutColumn& column) {
  const uint64_t elements = pages.elements();
  const auto first = static_cast<int64_t>(cluster.first_entry);
  uint64_t before = 0;
  for (const PageInfo& page : pages.pages) {
    const uint64_t bytes = page.stored_bytes();
    const int64_t begin = EntryAt(before, elements, cluster.entries);
    before += page.elements;
    if (bytes != 0 && bytes <= std::numeric_limits<uint32_t>::max()) {
      column.units.push_back({page.locator.offset, static_cast<uint32_t>(bytes), first + begin,
                              EntryAt(before, elements, cluster.entries) - begin});
    }
  }
}

}  // namespace

LayoutSet RntupleLayout(const Rntuple& ntuple) {
  LayoutSet set;
  set.name = ntuple.name();
  set.entries = static_cast<int64_t>(ntuple.entries());
  const std::vector<std::string> names = RntupleColumnNames(ntuple);
  set.columns.resize(names.size());
  for (size_t c = 0; c < names.size(); ++c) {
    set.columns[c].name = names[c];
  }
  for (const ClusterInfo& cluster : ntuple.clusters()) {
    const auto first = static_cast<int64_t>(cluster.first_entry);
    set.clusters.push_back({first, first + static_cast<int64_t>(cluster.entries)});
    // A cluster lists fewer columns than the schema when a schema extension came later.
    for (size_t c = 0; c < cluster.columns.size() && c < set.columns.size(); ++c) {
      if (!cluster.columns[c].suppressed) {
        AddClusterPages(cluster, cluster.columns[c], set.columns[c]);
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
  for (const std::string& name : FERRY_TRY(RntupleNames(file))) {
    if (auto ntuple = Rntuple::Open(file, name)) {
      sets.push_back(RntupleLayout(**ntuple));
    }
  }
  return sets;
}

}  // namespace ferry::rootio
