#include "gen/event_template.h"

#include "gen/rntuple_template.h"
#include "rootio/rntuple_anchor.h"
#include "rootio/root_file.h"

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
  int32_t branch = -1;  // index in TreeInfo::branches
  int32_t leaf = -1;
  int32_t counter = -1;  // candidate index of the counter, -1 if none
  bool usable = true;
};

// Candidates: supported top-level branches with one leaf, each with its counter's candidate
// (a jagged branch whose counter is not a candidate is unusable). The others go to skipped.
std::vector<Candidate> FindCandidates(const rootio::TreeInfo& info,
                                      std::vector<std::string>* skipped) {
  std::vector<Candidate> cands;
  std::vector<int32_t> cand_of_branch(info.branches.size(), -1);
  for (int32_t bi : info.top_branches) {
    const rootio::Branch& b = info.branches[static_cast<size_t>(bi)];
    if (!b.supported || b.leaves.size() != 1 || !b.children.empty()) {
      skipped->push_back(b.name);
      continue;
    }
    cand_of_branch[static_cast<size_t>(bi)] = static_cast<int32_t>(cands.size());
    cands.push_back({bi, b.leaves[0]});
  }
  for (Candidate& c : cands) {
    const rootio::Leaf& leaf = info.leaves[static_cast<size_t>(c.leaf)];
    if (leaf.jagged()) {
      const rootio::Leaf& cl = info.leaves[static_cast<size_t>(leaf.count_leaf)];
      c.counter = cl.branch >= 0 ? cand_of_branch[static_cast<size_t>(cl.branch)] : -1;
      if (c.counter < 0) {
        c.usable = false;
      }
    }
  }
  return cands;
}

// Counters first: each usable candidate after its counter. Unusable ones go to skipped.
std::vector<int32_t> CountersFirst(std::span<const Candidate> cands,
                                   const rootio::TreeInfo& info,
                                   std::vector<std::string>* skipped) {
  std::vector<bool> emitted(cands.size(), false);
  std::vector<int32_t> order;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!cands[i].usable) {
      skipped->push_back(info.branches[static_cast<size_t>(cands[i].branch)].name);
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

// The candidates' specs and values, in order, into t.
Status ReadBranches(rootio::Tree& tree,
                    std::span<const Candidate> cands,
                    std::span<const int32_t> order,
                    const std::string& path,
                    EventTemplate* t) {
  const rootio::TreeInfo& info = tree.info();
  for (int32_t ci : order) {
    const Candidate& c = cands[static_cast<size_t>(ci)];
    const rootio::Branch& b = info.branches[static_cast<size_t>(c.branch)];
    const rootio::Leaf& leaf = info.leaves[static_cast<size_t>(c.leaf)];
    TemplateBranch tb;
    tb.spec.name = b.name;
    tb.spec.type = leaf.type;
    tb.spec.len = leaf.len < 1 || leaf.type == LeafType::kString ? 1 : leaf.len;
    tb.spec.title = b.title;
    if (c.counter >= 0) {
      tb.spec.count =
          info.branches[static_cast<size_t>(cands[static_cast<size_t>(c.counter)].branch)].name;
    }
    tb.values = FERRY_TRY_CTX(tree.ReadLeaf(c.leaf, tree.All()), "template " + path);
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

// A TTree as a template: its flat branches, counters before the branches they count.
Result<EventTemplate> LoadTreeTemplate(const rootio::RootFile& file,
                                       const std::string& path,
                                       std::string_view tree_name) {
  auto tree = FERRY_TRY(file.OpenTree(tree_name));
  const rootio::TreeInfo& info = tree->info();
  EventTemplate t;
  t.path = path;
  t.tree_title = info.title;
  t.entries = info.entries;
  if (t.entries <= 0) {
    return InvalidArgumentError("template " + path + " has no entries in "
                                + std::string(tree_name));
  }
  const std::vector<Candidate> cands = FindCandidates(info, &t.skipped);
  const std::vector<int32_t> order = CountersFirst(cands, info, &t.skipped);
  FERRY_TRY(ReadBranches(*tree, cands, order, path, &t));
  if (t.branches.empty()) {
    return InvalidArgumentError("template " + path + " has no readable flat branch");
  }
  return t;
}

}  // namespace

Result<EventTemplate> LoadTemplate(const std::string& path, std::string_view name) {
  auto file = FERRY_TRY(rootio::RootFile::OpenPath(path));
  auto key = FERRY_TRY(file->FindKey(name));
  EventTemplate t;
  if (key.class_name == rootio::kRntupleClassName) {
    t = FERRY_TRY(LoadRntupleTemplate(*file, path, name));
  } else {
    t = FERRY_TRY(LoadTreeTemplate(*file, path, name));
  }
  EnsureEventIds(&t);
  return t;
}

}  // namespace ferry::gen
