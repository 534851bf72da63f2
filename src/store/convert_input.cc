// Convert's inputs: a TTree or an RNTuple behind rootio::Dataset, and the event store schema of
// each. An RNTuple's collections are RVec fields counted by their cardinality fields (as ROOT's
// importer and `ferry gen --format rntuple` write NanoAOD), which map onto the store's jagged
// columns and their counters as a TTree's leaves and counter leaves do.
#include <algorithm>

#include "store/convert_internal.h"

namespace ferry::store::convert_internal {
namespace {

using rootio::LeafType;

// Why a field is not stored, or "" when it is (a jagged one still needs its counter's column).
std::string NotStored(const rootio::FieldInfo& f) {
  if (f.leaf_list) {
    return "leaf-list branch (not stored in the event store)";
  }
  if (f.id < 0) {
    return f.unreadable;
  }
  if (f.shape.type == LeafType::kString || f.shape.type == LeafType::kUnknown) {
    return std::string(rootio::LeafTypeName(f.shape.type))
           + " leaf (not stored in the event store)";
  }
  return "";
}

// A jagged field's counter column, or why it has none: the counter must be a stored integer
// scalar (the column of a TTree's count leaf, of an RNTuple's cardinality field).
Result<int32_t> CounterColumn(const rootio::FieldInfo& f,
                              std::span<const int32_t> column_of_field,
                              std::span<const ColumnSpec> cols) {
  if (f.counter < 0) {
    return NotFoundError("no cardinality field counts its collection");
  }
  const int32_t k = column_of_field[static_cast<size_t>(f.counter)];
  const ColumnSpec* kc = k >= 0 ? &cols[static_cast<size_t>(k)] : nullptr;
  if (kc == nullptr || kc->len != 1 || !rootio::IsIntegerLeafType(kc->type)) {
    return NotFoundError("its counter is not a stored integer scalar");
  }
  return k;
}

}  // namespace

Result<std::unique_ptr<OpenInput>> OpenInputData(const std::string& path, const std::string& name) {
  std::unique_ptr<rootio::RootFile> file = FERRY_TRY(rootio::RootFile::OpenPath(path));
  return FERRY_TRY_CTX(rootio::Dataset::Open(std::move(file), name), "file " + path);
}

// Fixed columns first, so every counter has a column before its jagged fields need it; the
// order within each pass is the dataset's (a TTree's branches, an RNTuple's fields).
Result<TreeSchema> SchemaOfInput(const OpenInput& in) {
  const std::vector<rootio::FieldInfo>& fields = in.Fields();
  TreeSchema out;
  std::vector<ColumnSpec> cols;
  std::vector<int32_t> column_of_field(fields.size(), -1);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < fields.size(); ++i) {
      const rootio::FieldInfo& f = fields[i];
      const std::string why = NotStored(f);
      if (!why.empty() || f.shape.jagged != (pass == 1)) {
        if (!why.empty() && pass == 0) {
          out.skipped.push_back(f.name + ": " + why);
        }
        continue;
      }
      ColumnSpec c;
      c.name = f.name;
      c.type = f.shape.type;
      c.len = f.shape.len;
      if (f.shape.jagged) {
        Result<int32_t> counter = CounterColumn(f, column_of_field, cols);
        if (!counter.has_value()) {
          out.skipped.push_back(f.name + ": " + counter.error().message());
          continue;
        }
        c.kind = ColumnKind::kJagged;
        c.counter = *counter;
      }
      column_of_field[i] = static_cast<int32_t>(cols.size());
      cols.push_back(std::move(c));
      out.leaves.push_back(f.id);
    }
  }
  out.schema = FERRY_TRY(Schema::Build(std::move(cols)));
  return out;
}

}  // namespace ferry::store::convert_internal
