#include "gen/object_model.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "base/strings.h"

namespace ferry::gen {

using rootio::LeafType;

namespace {

bool StartsNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsNoCase(s.substr(0, prefix.size()), prefix);
}

bool IsSignedInt(LeafType t) {
  return t == LeafType::kInt8 || t == LeafType::kInt16 || t == LeafType::kInt32
         || t == LeafType::kInt64;
}

// The collection a member branch <coll>_<target>Idx... points into ("Jet_muonIdx1" -> "muon"),
// or "" when the name has no such form.
std::string_view IndexTarget(std::string_view member, std::string_view coll) {
  if (member.size() <= coll.size() + 1 || member.substr(0, coll.size()) != coll
      || member[coll.size()] != '_') {
    return {};
  }
  const std::string_view rest = member.substr(coll.size() + 1);
  const size_t idx = rest.find("Idx");
  return idx == std::string_view::npos || idx == 0 ? std::string_view{} : rest.substr(0, idx);
}

// True when every template event lists its objects by non-increasing pt (NanoAOD's order for
// reconstructed objects).
bool PtOrdered(const rootio::Column& pt) {
  if (pt.type != LeafType::kFloat32 || !pt.jagged) {
    return false;
  }
  const std::span<const float> v = pt.values<float>();
  for (int64_t e = 0; e < pt.num_entries; ++e) {
    auto [lo, hi] = pt.EntryValues(e);
    for (uint64_t k = lo + 1; k < hi; ++k) {
      if (!(v[k - 1] >= v[k])) {
        return false;
      }
    }
  }
  return true;
}

// Multiplicity classes of a collection: from multiplicity 1 up, a class closes once its events
// hold kClassObjects objects and number kClassEvents; a short last class joins the one before.
void BuildClasses(CollectionModel* cm) {
  uint32_t max = 0;
  for (uint32_t n : cm->counts) {
    max = std::max(max, n);
  }
  std::vector<uint64_t> events(max + 1, 0);
  for (uint32_t n : cm->counts) {
    ++events[n];
  }
  cm->class_of.assign(max + 1, 0);
  uint32_t cls = 0;
  uint64_t objects = 0, members = 0;
  for (uint32_t n = 1; n <= max; ++n) {
    cm->class_of[n] = cls;
    objects += events[n] * n;
    members += events[n];
    if (objects >= kClassObjects && members >= kClassEvents && n < max) {
      ++cls;
      objects = members = 0;
    }
  }
  if (cls > 0 && (objects < kClassObjects || members < kClassEvents)) {
    for (uint32_t n = 1; n <= max; ++n) {
      cm->class_of[n] = std::min(cm->class_of[n], cls - 1);
    }
  }
  cm->class_objects.assign(cm->class_of.empty() ? 0 : cm->class_of.back() + 1, {});
  for (size_t e = 0; e < cm->counts.size(); ++e) {
    auto& pool = cm->class_objects[cm->class_of[cm->counts[e]]];
    for (uint64_t k = cm->first[e]; k < cm->first[e + 1]; ++k) {
      pool.push_back(static_cast<uint32_t>(k));
    }
  }
}

// The kernel's centres (in the branch's type) and widths in the layout of the template column.
void KernelColumns(const rootio::Column& values,
                   const FloatKernel& k,
                   rootio::Column* centres,
                   rootio::Column* widths) {
  *centres = values;
  *widths = values;
  widths->type = LeafType::kFloat32;
  widths->bytes.resize(k.widths.size() * 4);
  std::memcpy(widths->bytes.data(), k.widths.data(), widths->bytes.size());
  for (size_t i = 0; i < k.centres.size(); ++i) {
    if (values.type == LeafType::kFloat32) {
      const auto f = static_cast<float>(k.centres[i]);
      std::memcpy(centres->bytes.data() + 4 * i, &f, 4);
    } else {
      std::memcpy(centres->bytes.data() + 8 * i, &k.centres[i], 8);
    }
  }
}

std::vector<double> PoolValues(const rootio::Column& c) {
  std::vector<double> out(c.num_values());
  for (size_t k = 0; k < out.size(); ++k) {
    out[k] = c.AsDouble(k);
  }
  return out;
}

// The collections (branches sharing a counter), in the order of their counters' first
// members; a collection whose members do not hold len values per object is kept whole.
void FindCollections(const EventTemplate& tmpl, ObjectModel* m) {
  const size_t nb = tmpl.branches.size();
  const auto entries = static_cast<size_t>(tmpl.entries);
  for (size_t b = 0; b < nb; ++b) {
    const rootwrite::BranchSpec& spec = tmpl.branches[b].spec;
    if (spec.count.empty() || spec.type == LeafType::kString) {
      continue;
    }
    const int32_t counter = tmpl.Find(spec.count);
    if (counter < 0) {
      continue;
    }
    int32_t c = m->collection_of[static_cast<size_t>(counter)];
    if (c < 0) {
      CollectionModel cm;
      cm.counter = counter;
      cm.name = spec.count.size() > 1 && spec.count[0] == 'n' ? spec.count.substr(1) : spec.count;
      const rootio::Column& cc = tmpl.branches[static_cast<size_t>(counter)].values;
      cm.counts.resize(entries);
      cm.first.resize(entries + 1);
      cm.first[0] = 0;
      for (size_t e = 0; e < entries; ++e) {
        cm.counts[e] = static_cast<uint32_t>(cc.AsUint64(e));
        cm.first[e + 1] = cm.first[e] + cm.counts[e];
      }
      c = static_cast<int32_t>(m->collections.size());
      m->collection_of[static_cast<size_t>(counter)] = c;
      m->collections.push_back(std::move(cm));
    }
    CollectionModel& cm = m->collections[static_cast<size_t>(c)];
    cm.members.push_back(static_cast<int32_t>(b));
    m->collection_of[b] = c;
    // Objects are addressed by their index in the pool: every member must hold len values
    // per object in every event, else the collection can only be copied whole.
    const rootio::Column& v = tmpl.branches[b].values;
    const auto len = static_cast<uint64_t>(spec.len);
    bool aligned = v.offsets.size() == entries + 1;
    for (size_t e = 0; aligned && e <= entries; ++e) {
      aligned = v.offsets[e] == cm.first[e] * len;
    }
    cm.whole = cm.whole || !aligned;
  }
}

// Whether a collection can be resampled object by object (else it is copied whole): its
// index branches' targets, a pt order to keep, and the classes of its events by size.
void ShapeCollection(const EventTemplate& tmpl, ObjectModel* m, CollectionModel& cm) {
  // A vector whose index is its meaning (LHEPdfWeight[nLHEPdfWeight]).
  if (cm.members.size() == 1
      && tmpl.branches[static_cast<size_t>(cm.members[0])].spec.name == cm.name) {
    cm.whole = true;
  }
  for (int32_t b : cm.members) {
    const rootwrite::BranchSpec& spec = tmpl.branches[static_cast<size_t>(b)].spec;
    const std::string_view target = IndexTarget(spec.name, cm.name);
    if (target.empty() || !IsSignedInt(spec.type)) {
      continue;
    }
    for (size_t t = 0; t < m->collections.size(); ++t) {
      if (EqualsNoCase(m->collections[t].name, target)) {
        m->index_target[static_cast<size_t>(b)] = static_cast<int32_t>(t);
      }
    }
    // A collection that points into itself is a graph (GenPart's decay tree): kept whole.
    if (m->index_target[static_cast<size_t>(b)] == m->collection_of[static_cast<size_t>(b)]) {
      cm.whole = true;
    }
  }
  const int32_t pt = tmpl.Find(cm.name + "_pt");
  if (pt >= 0 && tmpl.branches[static_cast<size_t>(pt)].spec.len == 1
      && m->collection_of[static_cast<size_t>(pt)] >= 0
      && m->collections[static_cast<size_t>(m->collection_of[static_cast<size_t>(pt)])].name
             == cm.name) {
    if (PtOrdered(tmpl.branches[static_cast<size_t>(pt)].values)) {
      cm.sort_key = pt;
    } else {
      cm.whole = true;  // ordered by something else, which has a meaning we cannot redo
    }
  }
  if (cm.whole) {
    cm.sort_key = -1;
  } else {
    BuildClasses(&cm);
  }
}

// Event-level groups (branches outside collections, by prefix; generator branches as one),
// in template order of their first branch.
void FindGroups(const EventTemplate& tmpl, ObjectModel* m) {
  const size_t nb = tmpl.branches.size();
  for (size_t b = 0; b < nb; ++b) {
    const auto bi = static_cast<int32_t>(b);
    if (m->collection_of[b] >= 0 || bi == tmpl.run || bi == tmpl.lumi || bi == tmpl.event) {
      continue;
    }
    const std::string& name = tmpl.branches[b].spec.name;
    const bool generator = StartsNoCase(name, "gen") || StartsNoCase(name, "lhe");
    const std::string key = generator ? "generator" : name.substr(0, name.find('_'));
    auto it = std::find_if(m->groups.begin(), m->groups.end(),
                           [&](const EventGroup& g) { return g.key == key; });
    if (it == m->groups.end()) {
      m->groups.push_back({key, {}, generator});
      it = m->groups.end() - 1;
    }
    it->branches.push_back(bi);
    m->group_of[b] = static_cast<int32_t>(it - m->groups.begin());
  }
}

// Each floating-point branch's kernel, its centres and widths as columns beside the values.
void FitKernels(const EventTemplate& tmpl, ObjectModel* m) {
  const size_t nb = tmpl.branches.size();
  m->centres.resize(nb);
  m->widths.resize(nb);
  for (size_t b = 0; b < nb; ++b) {
    const TemplateBranch& tb = tmpl.branches[b];
    if (tb.spec.type == LeafType::kFloat32 || tb.spec.type == LeafType::kFloat64) {
      const int32_t c = m->collection_of[b];
      const bool whole = c >= 0 && m->collections[static_cast<size_t>(c)].whole;
      m->kernels[b] = FitKernel(PoolValues(tb.values), tb.spec.type == LeafType::kFloat64,
                                IsAngleName(tb.spec.name), whole);
      if (m->kernels[b].shape != FloatKernel::Shape::kCopy) {
        KernelColumns(tb.values, m->kernels[b], &m->centres[b], &m->widths[b]);
        // The columns hold them now; the model need not keep them twice.
        m->kernels[b].centres = {};
        m->kernels[b].widths = {};
      }
    }
  }
}

}  // namespace

ObjectModel BuildObjectModel(const EventTemplate& tmpl) {
  ObjectModel m;
  const size_t nb = tmpl.branches.size();
  m.collection_of.assign(nb, -1);
  m.group_of.assign(nb, -1);
  m.index_target.assign(nb, -1);
  m.kernels.resize(nb);
  FindCollections(tmpl, &m);
  for (CollectionModel& cm : m.collections) {
    ShapeCollection(tmpl, &m, cm);
  }
  FindGroups(tmpl, &m);
  FitKernels(tmpl, &m);
  return m;
}

}  // namespace ferry::gen
