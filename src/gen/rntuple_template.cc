#include "gen/rntuple_template.h"

#include <cstring>
#include <map>

#include "rootio/rntuple.h"
#include "rootwrite/rntuple_model.h"

namespace ferry::gen {
namespace {

using rootio::LeafType;
using rootio::RntupleValue;

constexpr std::string_view kCardinality = "ROOT::RNTupleCardinality<";

// A field read as a branch.
struct Plan {
  uint32_t field = 0;
  rootwrite::BranchSpec spec;
};

bool IsRvec(std::string_view type) {
  return type.starts_with("ROOT::VecOps::RVec<") || type.starts_with("std::vector<");
}

// The branch type of a projected RVec's items, kUnknown when they are not scalars.
LeafType ItemType(const rootio::Rntuple& r, uint32_t field) {
  const std::vector<uint32_t>& items = r.Children(field);
  if (items.size() != 1 || !r.Children(items[0]).empty()) {
    return LeafType::kUnknown;
  }
  return rootwrite::LeafTypeOfRntupleName(r.fields()[items[0]].type_name);
}

// The counter branch of each collection with a cardinality field, by collection field id.
std::map<uint32_t, Plan> Counters(const rootio::Rntuple& r) {
  std::map<uint32_t, Plan> out;
  for (uint32_t id : r.TopLevelFields()) {
    const rootio::FieldRecord& f = r.fields()[id];
    if (f.projected() && f.type_name.starts_with(kCardinality)) {
      const bool wide = f.type_name.find("uint64_t") != std::string::npos;
      out[f.source_field_id] = {id, {f.name, wide ? LeafType::kUInt64 : LeafType::kUInt32}};
      out[f.source_field_id].spec.title = f.description;
    }
  }
  return out;
}

// The branches, in field order with each counter moved before its first RVec.
std::vector<Plan> PlanBranches(const rootio::Rntuple& r, std::vector<std::string>* skipped) {
  std::map<uint32_t, Plan> counters = Counters(r);
  std::map<uint32_t, bool> emitted;  // counters by collection
  std::vector<Plan> plans;
  for (uint32_t id : r.TopLevelFields()) {
    const rootio::FieldRecord& f = r.fields()[id];
    const LeafType scalar = rootwrite::LeafTypeOfRntupleName(f.type_name);
    const auto counter = counters.find(f.source_field_id);
    if (f.projected() && f.type_name.starts_with(kCardinality)) {
      if (!emitted[f.source_field_id]) {
        emitted[f.source_field_id] = true;
        plans.push_back(counters[f.source_field_id]);
      }
    } else if (f.role == static_cast<uint16_t>(rootio::FieldRole::kLeaf) && !f.projected()
               && scalar != LeafType::kUnknown && r.Children(id).empty()) {
      plans.push_back({id, {f.name, scalar, 1, "", f.description}});
    } else if (f.type_name == "std::string" && !f.projected()) {
      plans.push_back({id, {f.name, LeafType::kString, 1, "", f.description}});
    } else if (f.repetitive() && f.type_name.starts_with("std::array<") && f.array_size > 0
               && ItemType(r, id) != LeafType::kUnknown) {
      plans.push_back(
          {id, {f.name, ItemType(r, id), static_cast<int32_t>(f.array_size), "", f.description}});
    } else if (IsRvec(f.type_name) && f.projected() && counter != counters.end()
               && ItemType(r, id) != LeafType::kUnknown) {
      if (!emitted[f.source_field_id]) {
        emitted[f.source_field_id] = true;
        plans.push_back(counter->second);
      }
      plans.push_back({id, {f.name, ItemType(r, id), 1, counter->second.spec.name, f.description}});
    } else if (!(f.type_name.empty() && counters.count(id) > 0)) {
      // (an untyped collection with a cardinality is the storage of the RVecs above)
      skipped->push_back(f.name);
    }
  }
  return plans;
}

template <class T>
void Put(rootio::Column& c, T v) {
  const size_t at = c.bytes.size();
  c.bytes.resize(at + sizeof(T));
  std::memcpy(c.bytes.data() + at, &v, sizeof(T));
}

void Append(const RntupleValue& v, rootio::Column& c) {
  switch (c.type) {
    case LeafType::kBool:
      return Put<uint8_t>(c, v.i != 0 ? 1 : 0);
    case LeafType::kInt8:
      return Put(c, static_cast<int8_t>(v.i));
    case LeafType::kUInt8:
      return Put(c, static_cast<uint8_t>(v.u));
    case LeafType::kInt16:
      return Put(c, static_cast<int16_t>(v.i));
    case LeafType::kUInt16:
      return Put(c, static_cast<uint16_t>(v.u));
    case LeafType::kInt32:
      return Put(c, static_cast<int32_t>(v.i));
    case LeafType::kUInt32:
      return Put(c, static_cast<uint32_t>(v.u));
    case LeafType::kInt64:
      return Put(c, v.i);
    case LeafType::kUInt64:
      return Put(c, v.u);
    case LeafType::kFloat32:
      return Put(c, static_cast<float>(v.d));
    default:
      return Put(c, v.d);
  }
}

// A field's values for every entry as the column of its branch.
Result<rootio::Column> ReadColumn(const rootio::Rntuple& r, const Plan& p) {
  std::vector<RntupleValue> values = FERRY_TRY(r.Read(p.field, 0, r.entries()));
  rootio::Column c;
  c.type = p.spec.type;
  c.num_entries = static_cast<int64_t>(values.size());
  c.jagged = !p.spec.count.empty() || p.spec.type == LeafType::kString;
  c.fixed_len = static_cast<uint32_t>(p.spec.len);
  if (c.jagged) {
    c.offsets.push_back(0);
  }
  for (const RntupleValue& v : values) {
    if (p.spec.type == LeafType::kString) {
      c.bytes.insert(c.bytes.end(), v.s.begin(), v.s.end());
      c.offsets.push_back(c.offsets.back() + v.s.size());
      continue;
    }
    if (!c.jagged && p.spec.len == 1) {
      Append(v, c);
      continue;
    }
    if (!c.jagged) {  // std::array: len items
      for (const RntupleValue& item : v.items) {
        Append(item, c);
      }
      continue;
    }
    for (const RntupleValue& item : v.items) {
      Append(item, c);
    }
    c.offsets.push_back(c.offsets.back() + v.items.size());
  }
  return c;
}

}  // namespace

Result<EventTemplate> LoadRntupleTemplate(const rootio::RootFile& file,
                                          const std::string& path,
                                          std::string_view name) {
  auto r = FERRY_TRY(rootio::Rntuple::Open(file, name));
  EventTemplate t;
  t.path = path;
  t.tree_title = r->header().description;
  t.entries = static_cast<int64_t>(r->entries());
  if (t.entries <= 0) {
    return InvalidArgumentError("template " + path + " has no entries in " + std::string(name));
  }
  for (const Plan& p : PlanBranches(*r, &t.skipped)) {
    TemplateBranch tb;
    tb.spec = p.spec;
    tb.values = FERRY_TRY_CTX(ReadColumn(*r, p), "template " + path + " field " + p.spec.name);
    t.branches.push_back(std::move(tb));
  }
  if (t.branches.empty()) {
    return InvalidArgumentError("template " + path + " has no usable flat field");
  }
  return t;
}

}  // namespace ferry::gen
