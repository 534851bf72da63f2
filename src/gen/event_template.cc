#include "gen/event_template.h"

#include <memory>

#include "rootio/dataset.h"

namespace ferry::gen {

using rootio::LeafType;

int32_t EventTemplate::Find(std::string_view name) const {
  for (size_t i = 0; i < branches.size(); ++i) {
    if (branches[i].spec.name == name) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

namespace {

struct Candidate {
  int32_t field = -1;    // index in Dataset::Fields()
  int32_t counter = -1;  // candidate index of the counter, -1 if none
  bool usable = true;
};

// Candidates: the flat fields that are readable columns (a TTree's single-leaf branches that
// are no part of an object), each with its counter's candidate (a jagged field whose counter
// is not a candidate is unusable). The others go to skipped, except a TTree's sub-branches,
// which the branch holding them stands for.
std::vector<Candidate> FindCandidates(std::span<const rootio::FieldInfo> fields,
                                      std::vector<std::string>* skipped) {
  std::vector<Candidate> cands;
  std::vector<int32_t> cand_of_field(fields.size(), -1);
  for (size_t i = 0; i < fields.size(); ++i) {
    const rootio::FieldInfo& f = fields[i];
    if (f.sub_branch) {
      continue;
    }
    if (f.id < 0 || f.has_sub_branches) {
      skipped->push_back(f.name);
      continue;
    }
    cand_of_field[i] = static_cast<int32_t>(cands.size());
    cands.push_back({static_cast<int32_t>(i)});
  }
  for (Candidate& c : cands) {
    const rootio::FieldInfo& f = fields[static_cast<size_t>(c.field)];
    if (f.shape.jagged) {
      c.counter = f.counter >= 0 ? cand_of_field[static_cast<size_t>(f.counter)] : -1;
      c.usable = c.counter >= 0;
    }
  }
  return cands;
}

// Counters first: each usable candidate after its counter. Unusable ones go to skipped.
std::vector<int32_t> CountersFirst(std::span<const Candidate> cands,
                                   std::span<const rootio::FieldInfo> fields,
                                   std::vector<std::string>* skipped) {
  std::vector<bool> emitted(cands.size(), false);
  std::vector<int32_t> order;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!cands[i].usable) {
      skipped->push_back(fields[static_cast<size_t>(cands[i].field)].name);
      continue;
    }
    int32_t c = cands[i].counter;
    if (c >= 0 && !emitted[static_cast<size_t>(c)]) {
      emitted[static_cast<size_t>(c)] = true;
      order.push_back(c);
    }
    if (!emitted[i]) {
      emitted[i] = true;
      order.push_back(static_cast<int32_t>(i));
    }
  }
  return order;
}

// The candidates' specs and values (every entry), in order, into t.
Status ReadBranches(const rootio::Dataset& data,
                    std::span<const Candidate> cands,
                    std::span<const int32_t> order,
                    EventTemplate* t) {
  const std::vector<rootio::FieldInfo>& fields = data.Fields();
  rootio::DatasetScratch scratch;
  for (int32_t ci : order) {
    const Candidate& c = cands[static_cast<size_t>(ci)];
    const rootio::FieldInfo& f = fields[static_cast<size_t>(c.field)];
    TemplateBranch tb;
    tb.spec.name = f.name;
    tb.spec.type = f.shape.type;
    tb.spec.len = static_cast<int32_t>(f.shape.len);
    tb.spec.title = f.title;
    if (c.counter >= 0) {
      tb.spec.count = fields[static_cast<size_t>(cands[static_cast<size_t>(c.counter)].field)].name;
    }
    FERRY_TRY_CTX(data.ReadInto(f.id, {0, data.entries()}, &tb.values, &scratch),
                  "template " + t->path + " field " + f.name);
    t->branches.push_back(std::move(tb));
  }
  return OkStatus();
}

// The event identifiers the event store relies on (run, luminosityBlock, event) in front, of
// their types; a missing one or one of another type is added empty, to be generated.
void EnsureEventIds(EventTemplate* t) {
  struct Id {
    const char* name;
    LeafType type;
    int32_t* index;
  };
  const Id ids[] = {{"run", LeafType::kUInt32, &t->run},
                    {"luminosityBlock", LeafType::kUInt32, &t->lumi},
                    {"event", LeafType::kUInt64, &t->event}};
  size_t insert_at = 0;
  for (const Id& id : ids) {
    int32_t at = t->Find(id.name);
    if (at >= 0 && t->branches[static_cast<size_t>(at)].spec.type != id.type) {
      t->branches.erase(t->branches.begin() + at);
      t->skipped.push_back(std::string(id.name) + " (type replaced)");
      at = -1;
    }
    if (at < 0) {
      TemplateBranch tb;
      tb.spec.name = id.name;
      tb.spec.type = id.type;
      tb.spec.title = std::string(id.name) + "/" + rootwrite::LeafTypeCode(id.type);
      t->branches.insert(t->branches.begin() + static_cast<ptrdiff_t>(insert_at), std::move(tb));
    }
    ++insert_at;
  }
  for (const Id& id : ids) {
    *id.index = t->Find(id.name);
  }
}

}  // namespace

Result<EventTemplate> LoadTemplate(const std::string& path, std::string_view name) {
  std::unique_ptr<rootio::Dataset> data = FERRY_TRY(rootio::Dataset::OpenPath(path, name));
  EventTemplate t;
  t.path = path;
  t.tree_title = std::string(data->title());
  t.entries = data->entries();
  if (t.entries <= 0) {
    return InvalidArgumentError("template " + path + " has no entries in " + std::string(name));
  }
  const std::vector<Candidate> cands = FindCandidates(data->Fields(), &t.skipped);
  const std::vector<int32_t> order = CountersFirst(cands, data->Fields(), &t.skipped);
  FERRY_TRY(ReadBranches(*data, cands, order, &t));
  if (t.branches.empty()) {
    return InvalidArgumentError("template " + path + " has no readable flat branch");
  }
  EnsureEventIds(&t);
  return t;
}

}  // namespace ferry::gen
