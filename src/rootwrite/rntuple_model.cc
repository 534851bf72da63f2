#include "rootwrite/rntuple_model.h"

#include <string>

namespace ferry::rootwrite {
namespace {

using rootio::ColumnType;
using rootio::FieldRecord;
using rootio::FieldRole;
using rootio::LeafType;

struct LeafLayout {
  std::string_view type_name;  // ROOT's normalized spelling
  ColumnType split;            // the column of a compressed RNTuple
  ColumnType plain;            // of an uncompressed one
};

const LeafLayout* LayoutOf(LeafType t) {
  static constexpr LeafLayout kBool{"bool", ColumnType::kBit, ColumnType::kBit};
  static constexpr LeafLayout kI8{"std::int8_t", ColumnType::kInt8, ColumnType::kInt8};
  static constexpr LeafLayout kU8{"std::uint8_t", ColumnType::kUInt8, ColumnType::kUInt8};
  static constexpr LeafLayout kI16{"std::int16_t", ColumnType::kSplitInt16, ColumnType::kInt16};
  static constexpr LeafLayout kU16{"std::uint16_t", ColumnType::kSplitUInt16, ColumnType::kUInt16};
  static constexpr LeafLayout kI32{"std::int32_t", ColumnType::kSplitInt32, ColumnType::kInt32};
  static constexpr LeafLayout kU32{"std::uint32_t", ColumnType::kSplitUInt32, ColumnType::kUInt32};
  static constexpr LeafLayout kI64{"std::int64_t", ColumnType::kSplitInt64, ColumnType::kInt64};
  static constexpr LeafLayout kU64{"std::uint64_t", ColumnType::kSplitUInt64, ColumnType::kUInt64};
  static constexpr LeafLayout kF32{"float", ColumnType::kSplitReal32, ColumnType::kReal32};
  static constexpr LeafLayout kF64{"double", ColumnType::kSplitReal64, ColumnType::kReal64};
  switch (t) {
    case LeafType::kBool:
      return &kBool;
    case LeafType::kInt8:
      return &kI8;
    case LeafType::kUInt8:
      return &kU8;
    case LeafType::kInt16:
      return &kI16;
    case LeafType::kUInt16:
      return &kU16;
    case LeafType::kInt32:
      return &kI32;
    case LeafType::kUInt32:
      return &kU32;
    case LeafType::kInt64:
      return &kI64;
    case LeafType::kUInt64:
      return &kU64;
    case LeafType::kFloat32:
      return &kF32;
    case LeafType::kFloat64:
      return &kF64;
    default:
      return nullptr;
  }
}

constexpr LeafType kRntupleLeafTypes[] = {
    LeafType::kBool,   LeafType::kInt8,    LeafType::kUInt8,   LeafType::kInt16,
    LeafType::kUInt16, LeafType::kInt32,   LeafType::kUInt32,  LeafType::kInt64,
    LeafType::kUInt64, LeafType::kFloat32, LeafType::kFloat64,
};

class Builder {
 public:
  explicit Builder(bool split) : split_(split) {}

  // A field whose parent is `parent`, or a top-level field (its own parent) when parent < 0.
  uint32_t Field(int64_t parent,
                 FieldRole role,
                 std::string name,
                 std::string type_name,
                 int64_t source = -1) {
    auto id = static_cast<uint32_t>(model_.schema.fields.size());
    FieldRecord f;
    f.parent_id = parent < 0 ? id : static_cast<uint32_t>(parent);
    f.role = static_cast<uint16_t>(role);
    f.name = std::move(name);
    f.type_name = std::move(type_name);
    if (source >= 0) {
      f.flags = rootio::FieldFlags::kProjected;
      f.source_field_id = static_cast<uint32_t>(source);
    }
    model_.schema.fields.push_back(std::move(f));
    return id;
  }
  uint32_t Column(ColumnType type, uint32_t field) {
    rootio::ColumnRecord c;
    c.type = static_cast<uint16_t>(type);
    c.bits = rootio::FindColumnType(c.type)->min_bits;
    c.field_id = field;
    model_.schema.columns.push_back(c);
    return static_cast<uint32_t>(model_.schema.columns.size() - 1);
  }
  uint32_t Leaf(int64_t parent, const BranchSpec& b) {
    const LeafLayout& l = *LayoutOf(b.type);
    uint32_t field = Field(parent, FieldRole::kLeaf, b.name, std::string(l.type_name));
    if (parent < 0) {
      Describe(field, b);
    }
    return Column(split_ ? l.split : l.plain, field);
  }
  void Describe(uint32_t field, const BranchSpec& b) {
    model_.schema.fields[field].description = b.title;
  }
  // A top-level branch that is no collection member: a scalar, a std::array<T,N> (a repetitive
  // field without columns around its item "_0") or a std::string (offsets and characters).
  BranchRoute TopLevel(const BranchSpec& b) {
    if (b.type == LeafType::kString) {
      uint32_t field = Field(-1, FieldRole::kLeaf, b.name, "std::string");
      Describe(field, b);
      uint32_t index = IndexColumn(field);
      Column(ColumnType::kChar, field);
      return {BranchRoute::Kind::kString, index};
    }
    if (b.len == 1) {
      return {BranchRoute::Kind::kScalar, Leaf(-1, b)};
    }
    const LeafLayout& l = *LayoutOf(b.type);
    uint32_t array =
        Field(-1, FieldRole::kLeaf, b.name,
              "std::array<" + std::string(l.type_name) + "," + std::to_string(b.len) + ">");
    model_.schema.fields[array].flags |= rootio::FieldFlags::kRepetitive;
    model_.schema.fields[array].array_size = static_cast<uint64_t>(b.len);
    Describe(array, b);
    uint32_t item = Field(array, FieldRole::kLeaf, "_0", std::string(l.type_name));
    return {BranchRoute::Kind::kScalar, Column(split_ ? l.split : l.plain, item)};
  }
  uint32_t IndexColumn(uint32_t field) {
    return Column(split_ ? ColumnType::kSplitIndex64 : ColumnType::kIndex64, field);
  }
  void Alias(uint32_t column, uint32_t field) { model_.schema.aliases.push_back({column, field}); }

  RntupleModel& model() { return model_; }

 private:
  bool split_;
  RntupleModel model_;
};

}  // namespace

Status CheckRntupleBranch(std::span<const BranchSpec> branches, size_t i, int32_t* counter) {
  const BranchSpec& b = branches[i];
  *counter = -1;
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("branch " + b.name + ": " + why + " has no RNTuple layout here");
  };
  if (b.type == LeafType::kString && b.count.empty()) {
    return OkStatus();
  }
  if (LayoutOf(b.type) == nullptr) {
    return bad("type " + std::string(rootio::LeafTypeName(b.type)));
  }
  if (b.len < 1 || (b.len > 1 && !b.count.empty())) {
    return bad("a jagged array of fixed length " + std::to_string(b.len));
  }
  if (b.count.empty()) {
    return OkStatus();
  }
  for (size_t c = 0; c < i; ++c) {
    if (branches[c].name == b.count && branches[c].count.empty()
        && rootio::IsIntegerLeafType(branches[c].type)) {
      *counter = static_cast<int32_t>(c);
      return OkStatus();
    }
  }
  return bad("a counter '" + b.count + "' that is no integer branch declared before it");
}

namespace {

void AddProjections(Builder& b,
                    std::span<const BranchSpec> branches,
                    size_t counter,
                    uint32_t collection_field) {
  RntupleModel& m = b.model();
  const uint32_t index = m.routes[counter].column;
  for (size_t i = 0; i < branches.size(); ++i) {
    if (m.counter_branch[i] != static_cast<int32_t>(counter)) {
      continue;
    }
    const uint32_t member = m.routes[i].column;
    const std::string type(LayoutOf(branches[i].type)->type_name);
    uint32_t rvec = b.Field(-1, FieldRole::kCollection, branches[i].name,
                            "ROOT::VecOps::RVec<" + type + ">", collection_field);
    uint32_t item = b.Field(rvec, FieldRole::kLeaf, "_0", type, m.schema.columns[member].field_id);
    b.Describe(rvec, branches[i]);
    b.Alias(index, rvec);
    b.Alias(member, item);
  }
  // The importer's cardinality is 32-bit unless the counter itself is 64-bit.
  const bool wide = rootio::LeafTypeSize(branches[counter].type) == 8;
  uint32_t card = b.Field(
      -1, FieldRole::kLeaf, branches[counter].name,
      wide ? "ROOT::RNTupleCardinality<std::uint64_t>" : "ROOT::RNTupleCardinality<std::uint32_t>",
      collection_field);
  b.Describe(card, branches[counter]);
  b.Alias(index, card);
}

}  // namespace

std::string_view RntupleTypeName(LeafType type) {
  const LeafLayout* l = LayoutOf(type);
  return l == nullptr ? std::string_view() : l->type_name;
}

LeafType LeafTypeOfRntupleName(std::string_view name) {
  if (name == "char") {
    return LeafType::kInt8;
  }
  for (LeafType t : kRntupleLeafTypes) {
    if (LayoutOf(t)->type_name == name) {
      return t;
    }
  }
  return LeafType::kUnknown;
}

Result<RntupleModel> BuildRntupleModel(std::span<const BranchSpec> branches, bool split) {
  Builder b(split);
  RntupleModel& m = b.model();
  m.routes.resize(branches.size());
  m.counter_branch.resize(branches.size(), -1);
  std::vector<bool> is_counter(branches.size(), false);
  for (size_t i = 0; i < branches.size(); ++i) {
    FERRY_TRY(CheckRntupleBranch(branches, i, &m.counter_branch[i]));
    if (m.counter_branch[i] >= 0) {
      is_counter[static_cast<size_t>(m.counter_branch[i])] = true;
    }
  }
  for (size_t i = 0; i < branches.size(); ++i) {
    if (m.counter_branch[i] < 0 && !is_counter[i]) {
      m.routes[i] = b.TopLevel(branches[i]);
    }
  }
  std::vector<uint32_t> collection_fields;
  for (size_t c = 0; c < branches.size(); ++c) {
    if (!is_counter[c]) {
      continue;
    }
    uint32_t coll = b.Field(-1, FieldRole::kCollection,
                            "_collection" + std::to_string(collection_fields.size()), "");
    collection_fields.push_back(coll);
    m.routes[c] = {BranchRoute::Kind::kCounter, b.IndexColumn(coll)};
    uint32_t record = b.Field(coll, FieldRole::kRecord, "_0", "");
    for (size_t i = c + 1; i < branches.size(); ++i) {
      if (m.counter_branch[i] == static_cast<int32_t>(c)) {
        m.routes[i] = {BranchRoute::Kind::kMember, b.Leaf(record, branches[i])};
      }
    }
  }
  size_t k = 0;
  for (size_t c = 0; c < branches.size(); ++c) {
    if (is_counter[c]) {
      AddProjections(b, branches, c, collection_fields[k++]);
    }
  }
  return std::move(m);
}

}  // namespace ferry::rootwrite
