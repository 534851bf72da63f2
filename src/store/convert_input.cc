// Convert's inputs: a TTree or an RNTuple behind one leaf-reading interface, and the event
// store schema of each. An RNTuple's collections are RVec fields counted by their
// cardinality fields (as ROOT's importer and `ferry gen --format rntuple` write NanoAOD), which
// map onto the store's jagged columns and their counters as a TTree's leaves and counter
// leaves do.
#include <algorithm>
#include <set>

#include "store/convert_internal.h"

namespace ferry::store::convert_internal {
namespace {

Status OpenRntuple(const std::string& name, OpenInput* in) {
  in->rntuple = FERRY_TRY(rootio::Rntuple::Open(*in->file, name));
  // A field that projections read from (the importer's untyped "_collection<k>") is stored
  // through them: its RVecs and its cardinality.
  std::set<uint32_t> projected_from;
  for (const rootio::FieldRecord& f : in->rntuple->fields()) {
    if (f.projected()) {
      projected_from.insert(f.source_field_id);
    }
  }
  for (uint32_t id : in->rntuple->TopLevelFields()) {
    const std::string& field = in->rntuple->fields()[id].name;
    auto leaf = rootio::ResolveRntupleLeaf(*in->rntuple, field);
    if (leaf.has_value()) {
      in->fields.push_back(std::move(*leaf));
    } else if (projected_from.count(id) == 0) {
      in->unflat.push_back(field + ": " + leaf.error().message());
    }
  }
  return OkStatus();
}

// Fixed columns first (so every counter has a column before its jagged fields need it); a
// jagged field's counter is the cardinality field over the same collection.
Result<TreeSchema> RntupleSchemaOf(const OpenInput& in) {
  TreeSchema out;
  out.skipped = in.unflat;
  std::vector<ColumnSpec> cols;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < in.fields.size(); ++k) {
      const rootio::RntupleLeaf& f = in.fields[k];
      if (f.jagged != (pass == 1)) {
        continue;
      }
      ColumnSpec c;
      c.name = f.path;
      c.type = f.type;
      c.len = f.fixed_len;
      if (f.jagged) {
        auto counter = std::find_if(out.leaves.begin(), out.leaves.end(), [&](int32_t l) {
          const rootio::RntupleLeaf& g = in.fields[static_cast<size_t>(l)];
          return g.cardinality && g.index_column == f.index_column;
        });
        if (counter == out.leaves.end()) {
          out.skipped.push_back(f.path + ": no cardinality field counts its collection");
          continue;
        }
        c.kind = ColumnKind::kJagged;
        c.counter = static_cast<int32_t>(counter - out.leaves.begin());
      }
      cols.push_back(std::move(c));
      out.leaves.push_back(static_cast<int32_t>(k));
    }
  }
  out.schema = FERRY_TRY(Schema::Build(std::move(cols)));
  return out;
}

}  // namespace

Result<OpenInput> OpenInputData(const std::string& path, const std::string& name) {
  OpenInput in;
  in.file = FERRY_TRY(rootio::RootFile::OpenPath(path));
  const rootio::Key key = FERRY_TRY_CTX(in.file->FindKey(name), "file " + path);
  if (key.class_name == rootio::kRntupleClassName) {
    FERRY_TRY_CTX(OpenRntuple(name, &in), "file " + path);
  } else {
    in.tree = FERRY_TRY_CTX(in.file->OpenTree(name), "file " + path);
  }
  return in;
}

Result<TreeSchema> SchemaOfInput(const OpenInput& in) {
  return in.tree ? SchemaOf(in.tree->info()) : RntupleSchemaOf(in);
}

int64_t OpenInput::entries() const {
  return tree ? tree->entries() : static_cast<int64_t>(rntuple->entries());
}

std::vector<rootio::EntryRange> OpenInput::Clusters() const {
  if (tree) {
    return tree->info().Clusters();
  }
  std::vector<rootio::EntryRange> out;
  for (const rootio::ClusterInfo& c : rntuple->clusters()) {
    out.push_back(
        {static_cast<int64_t>(c.first_entry), static_cast<int64_t>(c.first_entry + c.entries)});
  }
  return out;
}

int32_t OpenInput::FindLeaf(std::string_view name) const {
  if (tree) {
    return tree->info().FindLeaf(name);
  }
  for (size_t k = 0; k < fields.size(); ++k) {
    if (fields[k].path == name) {
      return static_cast<int32_t>(k);
    }
  }
  return -1;
}

OpenInput::Shape OpenInput::ShapeOf(int32_t leaf) const {
  if (tree) {
    const rootio::Leaf& l = tree->info().leaves[static_cast<size_t>(leaf)];
    return {l.type, l.jagged(), static_cast<uint32_t>(std::max(1, l.len))};
  }
  const rootio::RntupleLeaf& f = fields[static_cast<size_t>(leaf)];
  return {f.type, f.jagged, f.fixed_len};
}

Status OpenInput::ReadLeafInto(int32_t leaf,
                               rootio::EntryRange range,
                               rootio::Column* out,
                               LeafScratch* scratch) const {
  if (tree) {
    return tree->ReadLeafInto(leaf, range, out, &scratch->decoder);
  }
  return rootio::ReadRntupleLeaf(*rntuple, fields[static_cast<size_t>(leaf)], range,
                                 &scratch->rntuple, out);
}

}  // namespace ferry::store::convert_internal
