// Convert, pass 1: the inputs' schema and coordinates, sorted into per-run plans.
#include <algorithm>
#include <numeric>
#include <tuple>

#include "store/convert_internal.h"

namespace ferry::store::convert_internal {
namespace {

using rootio::LeafType;

constexpr int64_t kSampleEntries = 4096;

}  // namespace

Status SameSchema(const Schema& a, const Schema& b, const std::string& path) {
  if (a.columns.size() != b.columns.size()) {
    return InvalidArgumentError("file " + path + " has " + std::to_string(b.columns.size())
                                + " storable columns, the first input has "
                                + std::to_string(a.columns.size()));
  }
  for (size_t i = 0; i < a.columns.size(); ++i) {
    const ColumnSpec& x = a.columns[i];
    const ColumnSpec& y = b.columns[i];
    if (x.name != y.name || x.type != y.type || x.kind != y.kind || x.len != y.len
        || x.counter != y.counter) {
      return InvalidArgumentError("file " + path + ": column " + y.name
                                  + " differs from the first input's " + x.name);
    }
  }
  return OkStatus();
}

struct Coord {
  uint64_t run;
  uint64_t lumi;
  uint64_t event;
  uint32_t input;
  uint64_t entry;
};

Result<std::vector<uint64_t>> ReadCoordinate(const OpenInput& in,
                                             const std::string& name,
                                             bool* present) {
  int32_t leaf = in.FindField(name);
  *present = leaf >= 0;
  if (leaf < 0) {
    return std::vector<uint64_t>{};
  }
  const rootio::FieldShape l = in.Shape(leaf);
  if (!rootio::IsIntegerLeafType(l.type) || l.jagged || l.len != 1) {
    return InvalidArgumentError("leaf " + name + " is not an integer scalar ("
                                + std::string(rootio::LeafTypeName(l.type)) + ")");
  }
  rootio::Column col;
  LeafScratch scratch;
  FERRY_TRY(in.ReadInto(leaf, {0, in.entries()}, &col, &scratch));
  std::vector<uint64_t> out(static_cast<size_t>(col.num_entries));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = col.AsUint64(i);
    if (rootio::IsSignedLeafType(l.type) && static_cast<int64_t>(out[i]) < 0) {
      return InvalidArgumentError(name + " is negative at entry " + std::to_string(i));
    }
  }
  return out;
}

// Mean uncompressed bytes of every column per event, from a sample of the first input.
Result<double> BytesPerEvent(const OpenInput& in, const TreeSchema& ts) {
  const Schema& s = ts.schema;
  double fixed = 0;
  for (int32_t f : s.fixed) {
    const ColumnSpec& c = s.columns[static_cast<size_t>(f)];
    fixed += static_cast<double>(c.len * c.value_size());
  }
  if (s.jagged.empty() || in.entries() == 0) {
    return fixed;
  }
  rootio::EntryRange sample{0, std::min<int64_t>(in.entries(), kSampleEntries)};
  double bytes = 0;
  LeafScratch scratch;
  rootio::Column counts;
  for (size_t g = 0; g < s.groups(); ++g) {
    int32_t k = s.group_counters[g];
    FERRY_TRY(in.ReadInto(ts.leaves[static_cast<size_t>(k)], sample, &counts, &scratch));
    double elements = 0;
    for (int64_t i = 0; i < counts.num_entries; ++i) {
      elements += static_cast<double>(counts.AsUint64(static_cast<size_t>(i)));
    }
    double per_element = 0;
    for (int32_t j : s.jagged) {
      const ColumnSpec& c = s.columns[static_cast<size_t>(j)];
      if (c.group == static_cast<int32_t>(g)) {
        per_element += static_cast<double>(c.len * c.value_size());
      }
    }
    bytes += elements * per_element / static_cast<double>(sample.size());
  }
  return fixed + bytes;
}

std::string CoordName(const Coord& c) {
  return std::to_string(c.run) + ":" + std::to_string(c.lumi) + ":" + std::to_string(c.event);
}

Error ColumnsDiffer(const std::string& path,
                    const std::string& whose,
                    const std::string& column,
                    bool missing) {
  return InvalidArgumentError("file " + path + ": columns differ from " + whose + "'s: " + column
                              + (missing ? " is missing" : " has another type, shape or counter"));
}

// Per column of `target`, the leaf of the input's column of that name, with the same type,
// shape and counter; `whose` names the target in errors.
Result<std::vector<int32_t>> MatchColumns(const Schema& target,
                                          const TreeSchema& ts,
                                          const std::string& path,
                                          const std::string& whose) {
  if (target.columns.size() != ts.schema.columns.size()) {
    return InvalidArgumentError("file " + path + " has " + std::to_string(ts.schema.columns.size())
                                + " storable columns, " + whose + " has "
                                + std::to_string(target.columns.size()));
  }
  const auto& cols = ts.schema.columns;
  std::vector<int32_t> leaves;
  for (const ColumnSpec& x : target.columns) {
    auto y = std::find_if(cols.begin(), cols.end(),
                          [&](const ColumnSpec& c) { return c.name == x.name; });
    const bool same_counter = y != cols.end()
                              && (x.kind != ColumnKind::kJagged
                                  || target.columns[static_cast<size_t>(x.counter)].name
                                         == cols[static_cast<size_t>(y->counter)].name);
    if (y == cols.end() || x.type != y->type || x.kind != y->kind || x.len != y->len
        || !same_counter) {
      return ColumnsDiffer(path, whose, x.name, y == cols.end());
    }
    leaves.push_back(ts.leaves[static_cast<size_t>(y - cols.begin())]);
  }
  return leaves;
}

Result<Plans> PlanInputs(const ConvertOptions& opt, Manifest& m, const Schema* store) {
  Plans out;
  std::vector<Coord> coords;
  bool any_lumi = false;
  bool any_missing_lumi = false;
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    const std::string& path = opt.inputs[i];
    std::unique_ptr<OpenInput> opened = FERRY_TRY(OpenInputData(path, opt.tree));
    const OpenInput& in = *opened;
    out.input_bytes += in.source().size();
    TreeSchema ts = FERRY_TRY_CTX(SchemaOfInput(in), "file " + path);
    if (i == 0) {
      out.bytes_per_event = FERRY_TRY_CTX(BytesPerEvent(in, ts), "file " + path);
      out.first = ts;
      out.first.schema = store != nullptr ? *store : ts.schema;
    }
    out.leaves.push_back(FERRY_TRY(MatchColumns(
        out.first.schema, ts, path, store != nullptr ? "the store" : "the first input")));
    bool has_run = false;
    bool has_lumi = false;
    bool has_event = false;
    auto runs = FERRY_TRY_CTX(ReadCoordinate(in, "run", &has_run), "file " + path);
    auto lumis = FERRY_TRY_CTX(ReadCoordinate(in, "luminosityBlock", &has_lumi), "file " + path);
    auto events = FERRY_TRY_CTX(ReadCoordinate(in, "event", &has_event), "file " + path);
    if (!has_run || !has_event) {
      return InvalidArgumentError("file " + path + ": tree " + opt.tree + " has no '"
                                  + (has_run ? "event" : "run")
                                  + "' leaf; events cannot be addressed");
    }
    any_lumi |= has_lumi;
    any_missing_lumi |= !has_lumi;
    m.inputs.push_back({path, static_cast<uint64_t>(in.entries())});
    for (size_t e = 0; e < runs.size(); ++e) {
      coords.push_back({runs[e], has_lumi ? lumis[e] : 0, events[e], static_cast<uint32_t>(i), e});
    }
  }
  if (any_lumi && any_missing_lumi) {
    return InvalidArgumentError("some inputs have luminosityBlock and some do not");
  }
  if (coords.empty()) {
    return InvalidArgumentError("the inputs hold no events");
  }
  out.no_lumi = !any_lumi;
  out.events = coords.size();
  std::vector<uint32_t> order(coords.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Coord& x = coords[a];
    const Coord& y = coords[b];
    return std::tie(x.run, x.lumi, x.event) < std::tie(y.run, y.lumi, y.event);
  });
  out.slots.resize(opt.inputs.size());
  for (size_t i = 0; i < opt.inputs.size(); ++i) {
    out.slots[i].resize(m.inputs[m.inputs.size() - opt.inputs.size() + i].entries);
  }
  for (size_t k = 0; k < order.size(); ++k) {
    const Coord& c = coords[order[k]];
    if (k > 0) {
      const Coord& p = coords[order[k - 1]];
      if (p.run == c.run && p.lumi == c.lumi && p.event == c.event) {
        return InvalidArgumentError("duplicate event " + CoordName(c) + ": " + opt.inputs[p.input]
                                    + " entry " + std::to_string(p.entry) + " and "
                                    + opt.inputs[c.input] + " entry " + std::to_string(c.entry));
      }
    }
    if (out.plans.empty() || out.plans.back().run != c.run) {
      out.plans.push_back({.run = c.run, .run_slot = 0});
      out.first_event.push_back(CoordName(c) + " (" + opt.inputs[c.input] + " entry "
                                + std::to_string(c.entry) + ")");
    }
    ShardPlan& p = out.plans.back();
    if (p.lumis.empty() || p.lumis.back().lumi != c.lumi) {
      p.lumis.push_back({c.lumi, p.event_numbers.size(), 0});
    }
    LumiEntry& l = p.lumis.back();
    out.slots[c.input][c.entry] = {static_cast<uint32_t>(out.plans.size() - 1),
                                   {static_cast<uint32_t>(p.lumis.size() - 1), l.count}};
    p.event_numbers.push_back(c.event);
    ++l.count;
  }
  return out;
}

}  // namespace ferry::store::convert_internal
