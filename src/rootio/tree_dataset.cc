// Dataset over a TTree (rootio/dataset.h): a field is a single-leaf branch and its id the leaf's
// index, so Tree's leaf reads and TreeClusterReader serve it as they are.
#include <algorithm>

#include "rootio/dataset_impl.h"
#include "rootio/storage.h"
#include "rootio/tree.h"
#include "rootio/tree_cluster_reader.h"

namespace ferry::rootio {
namespace {

FieldShape ShapeOfLeaf(const Leaf& l) {
  const uint32_t len = l.type == LeafType::kString ? 1 : static_cast<uint32_t>(std::max(1, l.len));
  return {l.type, l.jagged(), len};
}

// Every branch with leaves, in branch order; a jagged field's counter is the field of the
// branch that holds its count leaf (readable or not: the caller tells why it cannot count).
std::vector<FieldInfo> ListFields(const TreeInfo& info) {
  std::vector<FieldInfo> fields;
  std::vector<int32_t> field_of_branch(info.branches.size(), -1);
  for (size_t bi = 0; bi < info.branches.size(); ++bi) {
    const Branch& b = info.branches[bi];
    if (b.supported && b.leaves.empty()) {
      continue;
    }
    FieldInfo f;
    f.name = b.name;
    f.title = b.title;
    f.sub_branch = b.parent >= 0;
    f.has_sub_branches = !b.children.empty();
    if (!b.supported) {
      f.unreadable = b.unsupported_reason;
    } else if (b.leaves.size() != 1) {
      f.unreadable = "leaf-list branch";
      f.leaf_list = true;
    } else {
      f.id = b.leaves[0];
      f.shape = ShapeOfLeaf(info.leaves[static_cast<size_t>(f.id)]);
    }
    field_of_branch[bi] = static_cast<int32_t>(fields.size());
    fields.push_back(std::move(f));
  }
  for (FieldInfo& f : fields) {
    if (f.id >= 0 && f.shape.jagged) {
      const Leaf& count =
          info.leaves[static_cast<size_t>(info.leaves[static_cast<size_t>(f.id)].count_leaf)];
      f.counter = count.branch >= 0 ? field_of_branch[static_cast<size_t>(count.branch)] : -1;
    }
  }
  return fields;
}

class TreeDataset final : public Dataset {
 public:
  TreeDataset(std::unique_ptr<RootFile> file, std::unique_ptr<Tree> tree)
      : Dataset(std::move(file)), tree_(std::move(tree)), fields_(ListFields(tree_->info())) {}

  int64_t entries() const override { return tree_->entries(); }
  std::string_view title() const override { return tree_->info().title; }
  std::vector<EntryRange> Clusters() const override { return tree_->info().Clusters(); }
  const std::vector<FieldInfo>& Fields() const override { return fields_; }
  int32_t FindField(std::string_view name) const override { return tree_->info().FindLeaf(name); }
  FieldShape Shape(int32_t id) const override {
    return ShapeOfLeaf(tree_->info().leaves[static_cast<size_t>(id)]);
  }

  Status ReadInto(int32_t id,
                  EntryRange range,
                  Column* out,
                  DatasetScratch* scratch) const override {
    return tree_->ReadLeafInto(id, range, out, &scratch->parts().decoder);
  }

  Result<std::unique_ptr<ClusterReader>> ReadClusters(
      std::span<const std::string> fields, const ClusterReaderOptions& options) const override {
    return std::unique_ptr<ClusterReader>(std::make_unique<TreeClusterReader>(
        FERRY_TRY(TreeClusterReader::Make(*tree_, fields, options))));
  }

  // A branch is its own storage unit.
  Result<StorageSurvey> SurveyStorage() const override {
    const std::vector<BranchStorage> storage = FERRY_TRY(rootio::SurveyStorage(*tree_));
    StorageSurvey out;
    const std::vector<Branch>& branches = tree_->info().branches;
    for (size_t i = 0; i < branches.size(); ++i) {
      out.fields.push_back(branches[i].name);
      out.unit_bytes.push_back(storage[i].zbytes);
      out.uses.emplace_back(branches.size(), false);
      out.uses.back()[i] = true;
    }
    return out;
  }

 private:
  std::unique_ptr<Tree> tree_;
  std::vector<FieldInfo> fields_;
};

}  // namespace

Result<std::unique_ptr<Dataset>> OpenTreeDataset(std::unique_ptr<RootFile> file,
                                                 std::string_view name) {
  std::unique_ptr<Tree> tree = FERRY_TRY(file->OpenTree(name));
  return std::unique_ptr<Dataset>(std::make_unique<TreeDataset>(std::move(file), std::move(tree)));
}

}  // namespace ferry::rootio
