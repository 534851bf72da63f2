// Dataset over an RNTuple (rootio/dataset.h): a field is a flat top-level field
// (rootio/rntuple_columns.h) and its id the index into the dataset's flat fields; a collection
// reads as its projected RVecs, counted by the cardinality field over the same collection, as
// ROOT's importer and ferry's writer lay NanoAOD out.
#include <set>

#include "rootio/dataset_impl.h"
#include "rootio/rntuple.h"
#include "rootio/rntuple_cluster_reader.h"

namespace ferry::rootio {
namespace {

// The physical columns of a field and of its subfields (alias columns resolved).
void CollectColumns(const Rntuple& r, uint32_t field, std::vector<bool>* used) {
  for (size_t rep = 0; rep < r.RepresentationCount(field); ++rep) {
    for (uint32_t c : r.Representation(field, rep)) {
      (*used)[c] = true;
    }
  }
  for (uint32_t child : r.Children(field)) {
    CollectColumns(r, child, used);
  }
}

// A string is one value per entry, as a TTree's string leaf: not jagged in its shape, though
// its column has offsets.
FieldShape ShapeOf(const RntupleLeaf& leaf) {
  return {leaf.type, leaf.jagged && leaf.type != LeafType::kString, leaf.fixed_len};
}

class RntupleDataset final : public Dataset {
 public:
  RntupleDataset(std::unique_ptr<RootFile> file, std::unique_ptr<Rntuple> rntuple)
      : Dataset(std::move(file)), rntuple_(std::move(rntuple)) {
    ListFields();
  }

  int64_t entries() const override { return static_cast<int64_t>(rntuple_->entries()); }
  std::string_view title() const override { return rntuple_->header().description; }
  std::vector<EntryRange> Clusters() const override {
    std::vector<EntryRange> out;
    for (const ClusterInfo& c : rntuple_->clusters()) {
      out.push_back(
          {static_cast<int64_t>(c.first_entry), static_cast<int64_t>(c.first_entry + c.entries)});
    }
    return out;
  }
  const std::vector<FieldInfo>& Fields() const override { return fields_; }
  int32_t FindField(std::string_view name) const override {
    for (size_t k = 0; k < flat_.size(); ++k) {
      if (flat_[k].path == name) {
        return static_cast<int32_t>(k);
      }
    }
    return -1;
  }
  FieldShape Shape(int32_t id) const override { return ShapeOf(flat_[static_cast<size_t>(id)]); }

  Status ReadInto(int32_t id,
                  EntryRange range,
                  Column* out,
                  DatasetScratch* scratch) const override {
    return ReadRntupleLeaf(*rntuple_, flat_[static_cast<size_t>(id)], range,
                           &scratch->parts().rntuple, out);
  }

  Result<std::unique_ptr<ClusterReader>> ReadClusters(
      std::span<const std::string> fields, const ClusterReaderOptions& options) const override {
    return std::unique_ptr<ClusterReader>(std::make_unique<RntupleClusterReader>(
        FERRY_TRY(RntupleClusterReader::Make(*rntuple_, fields, options))));
  }

  // A physical column is a storage unit; a top-level field reads those of its subfields.
  Result<StorageSurvey> SurveyStorage() const override {
    const Rntuple& r = *rntuple_;
    StorageSurvey out;
    out.unit_bytes.assign(r.columns().size(), 0);
    for (const ClusterInfo& c : r.clusters()) {
      for (size_t k = 0; k < c.columns.size(); ++k) {
        for (const PageInfo& p : c.columns[k].pages) {
          out.unit_bytes[k] += p.locator.size;
        }
      }
    }
    for (uint32_t id : r.TopLevelFields()) {
      out.fields.push_back(r.fields()[id].name);
      out.uses.emplace_back(r.columns().size(), false);
      CollectColumns(r, id, &out.uses.back());
    }
    return out;
  }

 private:
  // The flat top-level fields and why the others are not; a field that projections read from
  // (the importer's untyped "_collection<k>") is read through them and not listed.
  void ListFields() {
    std::set<uint32_t> projected_from;
    for (const FieldRecord& f : rntuple_->fields()) {
      if (f.projected()) {
        projected_from.insert(f.source_field_id);
      }
    }
    for (uint32_t id : rntuple_->TopLevelFields()) {
      const FieldRecord& record = rntuple_->fields()[id];
      Result<RntupleLeaf> leaf = ResolveRntupleLeaf(*rntuple_, id);
      FieldInfo f;
      f.name = record.name;
      f.title = record.description;
      if (leaf.has_value()) {
        f.id = static_cast<int32_t>(flat_.size());
        f.shape = ShapeOf(*leaf);
        flat_.push_back(std::move(*leaf));
      } else if (projected_from.count(id) == 0) {
        f.unreadable = leaf.error().message();
      } else {
        continue;
      }
      fields_.push_back(std::move(f));
    }
    SetCounters();
  }

  // A jagged field's counter: the first cardinality field over the same collection.
  void SetCounters() {
    for (FieldInfo& f : fields_) {
      if (f.id < 0 || !f.shape.jagged) {
        continue;
      }
      const RntupleLeaf& leaf = flat_[static_cast<size_t>(f.id)];
      for (size_t k = 0; k < fields_.size(); ++k) {
        const int32_t id = fields_[k].id;
        if (id >= 0 && flat_[static_cast<size_t>(id)].cardinality
            && flat_[static_cast<size_t>(id)].index_column == leaf.index_column) {
          f.counter = static_cast<int32_t>(k);
          break;
        }
      }
    }
  }

  std::unique_ptr<Rntuple> rntuple_;
  std::vector<RntupleLeaf> flat_;
  std::vector<FieldInfo> fields_;
};

}  // namespace

Result<std::unique_ptr<Dataset>> OpenRntupleDataset(std::unique_ptr<RootFile> file,
                                                    std::string_view name) {
  std::unique_ptr<Rntuple> rntuple = FERRY_TRY(Rntuple::Open(*file, name));
  return std::unique_ptr<Dataset>(
      std::make_unique<RntupleDataset>(std::move(file), std::move(rntuple)));
}

}  // namespace ferry::rootio
