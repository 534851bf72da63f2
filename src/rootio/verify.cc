#include "rootio/verify.h"

#include <algorithm>

namespace ferry::rootio {

Result<VerifyStats> ReadAllTrees(const RootFile& file, uint64_t max_entries_per_leaf) {
  VerifyStats s;
  auto paths = FERRY_TRY(file.TreePaths());
  for (const std::string& path : paths) {
    auto tree = file.OpenTree(path);
    if (!tree.has_value()) {
      if (tree.error().code() == ErrorCode::kUnsupported) {
        continue;
      }
      return std::move(tree).error();
    }
    const Tree& t = **tree;
    ++s.trees;
    s.entries += static_cast<uint64_t>(t.entries());
    EntryRange range = t.All();
    if (max_entries_per_leaf > 0) {
      range.end = std::min<int64_t>(range.end, static_cast<int64_t>(max_entries_per_leaf));
    }
    for (size_t li = 0; li < t.info().leaves.size(); ++li) {
      auto leaf = static_cast<int32_t>(li);
      if (!t.CheckReadable(leaf).has_value()) {
        ++s.leaves_unsupported;
        continue;
      }
      Column c = FERRY_TRY_CTX(t.ReadLeaf(leaf, range), "file " + file.name() + " > TTree " + path);
      ++s.leaves_read;
      s.values += c.num_values();
    }
  }
  return s;
}

}  // namespace ferry::rootio
