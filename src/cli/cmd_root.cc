// ferry root ls|dump|baskets: inspect ROOT files without ROOT.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "base/strings.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/root_rntuple.h"
#include "cli/value_format.h"
#include "rootio/root_file.h"
#include "rootio/storage.h"
#include "xrd/open_source.h"

namespace ferry::cli {
namespace {

// A local path or a root:// URL (through the XrdCl client, and its plug-ins).
Result<std::unique_ptr<rootio::RootFile>> OpenRootFile(const std::string& path) {
  return rootio::RootFile::Open(FERRY_TRY(xrd::OpenSource(path)));
}

std::string RootVersion(int32_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d.%02d/%02d", v / 10000, (v / 100) % 100, v % 100);
  return buf;
}

std::string ShapeOf(const rootio::TreeInfo& info, const rootio::Leaf& l) {
  if (l.type == rootio::LeafType::kString) {
    return "string";
  }
  if (l.jagged()) {
    std::string s = "[" + info.leaves[static_cast<size_t>(l.count_leaf)].name + "]";
    if (l.len > 1) {
      s += "[" + std::to_string(l.len) + "]";
    }
    return s;
  }
  return l.len > 1 ? "[" + std::to_string(l.len) + "]" : "scalar";
}

void WriteBranchJson(JsonWriter& w,
                     const rootio::TreeInfo& info,
                     const rootio::Branch& b,
                     const rootio::BranchStorage& s) {
  w.BeginObject().Field("name", b.name);
  const rootio::Leaf* first =
      b.leaves.empty() ? nullptr : &info.leaves[static_cast<size_t>(b.leaves[0])];
  if (b.leaves.size() == 1 && first != nullptr) {
    w.Field("type", rootio::LeafTypeName(first->type));
  } else {
    w.Field("type", b.leaves.empty() ? "none" : "leaflist");
  }
  bool jagged = first != nullptr && b.leaves.size() == 1 && first->jagged();
  w.Field("jagged", jagged).Key("count");
  if (jagged) {
    w.String(info.leaves[static_cast<size_t>(first->count_leaf)].name);
  } else {
    w.Null();
  }
  w.Field("zbytes", s.zbytes).Field("bytes", s.bytes).Field("codec", s.CodecName());
  w.Field("baskets", static_cast<uint64_t>(b.baskets.size()));
  w.Field("embedded_baskets", static_cast<uint64_t>(s.embedded_baskets));
  w.Field("entries", b.entries).Field("supported", b.supported);
  if (!b.supported) {
    w.Field("unsupported_reason", b.unsupported_reason);
  }
  w.Key("leaves").BeginArray();
  for (int32_t li : b.leaves) {
    const rootio::Leaf& l = info.leaves[static_cast<size_t>(li)];
    w.BeginObject()
        .Field("name", l.name)
        .Field("type", rootio::LeafTypeName(l.type))
        .Field("class", l.class_name)
        .Field("shape", ShapeOf(info, l))
        .EndObject();
  }
  w.EndArray().EndObject();
}

// ferry root ls's text for one tree: its totals and a line per branch.
void PrintTreeText(const std::string& path,
                   const rootio::TreeInfo& info,
                   std::span<const rootio::BranchStorage> storage) {
  uint64_t z = 0, u = 0;
  for (const auto& s : storage) {
    z += s.zbytes;
    u += s.bytes;
  }
  std::printf(
      "\n  TTree %s \"%s\": %lld entries, %zu branches, %zu clusters, %s stored, %s "
      "uncompressed\n",
      path.c_str(), info.title.c_str(), static_cast<long long>(info.entries), info.branches.size(),
      info.Clusters().size(), HumanBytes(static_cast<double>(z)).c_str(),
      HumanBytes(static_cast<double>(u)).c_str());
  std::printf("    %-32s %-10s %-14s %8s %10s %10s  %s\n", "branch", "type", "shape", "baskets",
              "stored", "raw", "codec");
  for (size_t i = 0; i < info.branches.size(); ++i) {
    const rootio::Branch& b = info.branches[i];
    std::string type = "leaflist";
    std::string shape = std::to_string(b.leaves.size()) + " leaves";
    if (b.leaves.size() == 1) {
      const rootio::Leaf& l = info.leaves[static_cast<size_t>(b.leaves[0])];
      type = rootio::LeafTypeName(l.type);
      shape = ShapeOf(info, l);
    }
    if (!b.supported) {
      type = "(" + b.class_name + ")";
    }
    std::printf(
        "    %-32s %-10s %-14s %8zu %10s %10s  %s\n", b.name.c_str(), type.c_str(), shape.c_str(),
        b.baskets.size(), HumanBytes(static_cast<double>(storage[i].zbytes)).c_str(),
        HumanBytes(static_cast<double>(storage[i].bytes)).c_str(), storage[i].CodecName().c_str());
  }
}

int RunLs(const std::string& path, bool json) {
  auto file = OpenRootFile(path);
  if (!file.has_value()) {
    return ReportError(file.error());
  }
  const rootio::RootFile& f = **file;
  auto objects = f.ListObjects();
  if (!objects.has_value()) {
    return ReportError(objects.error());
  }
  JsonWriter w;
  w.BeginObject().Field("file", path);
  w.Field("root_version", RootVersion(f.header().version));
  w.Field("bytes", f.source().size()).Field("big_file", f.header().big);
  w.Field("compress", f.header().compress);
  w.Key("objects").BeginArray();
  for (const auto& o : *objects) {
    w.BeginObject()
        .Field("path", o.path)
        .Field("class", o.key.class_name)
        .Field("cycle", static_cast<int>(o.key.cycle))
        .EndObject();
  }
  w.EndArray();
  if (!json) {
    std::printf("%s: ROOT %s, %s, %s header, compression setting %d\n", path.c_str(),
                RootVersion(f.header().version).c_str(),
                HumanBytes(static_cast<double>(f.source().size())).c_str(),
                f.header().big ? "big (64-bit)" : "small (32-bit)", f.header().compress);
    for (const auto& o : *objects) {
      if (o.key.class_name != "TTree" && o.key.class_name != rootio::kRntupleClassName) {
        std::printf("  %-40s %s;%d\n", o.path.c_str(), o.key.class_name.c_str(), o.key.cycle);
      }
    }
  }
  w.Key("trees").BeginArray();
  for (const auto& o : *objects) {
    if (o.key.class_name != "TTree") {
      continue;
    }
    auto tree = f.OpenTree(o.path);
    if (!tree.has_value()) {
      if (tree.error().code() != ErrorCode::kUnsupported) {
        return ReportError(tree.error());
      }
      w.BeginObject().Field("path", o.path).Field("error", tree.error().ToString()).EndObject();
      if (!json) {
        std::printf("  %s: TTree not readable: %s\n", o.path.c_str(),
                    tree.error().ToString().c_str());
      }
      continue;
    }
    const rootio::TreeInfo& info = (*tree)->info();
    auto storage = rootio::SurveyStorage(**tree);
    if (!storage.has_value()) {
      return ReportError(storage.error());
    }
    w.BeginObject().Field("path", o.path).Field("title", info.title).Field("entries", info.entries);
    w.Field("clusters", static_cast<uint64_t>(info.Clusters().size()));
    w.Key("branches").BeginArray();
    for (size_t i = 0; i < info.branches.size(); ++i) {
      WriteBranchJson(w, info, info.branches[i], (*storage)[i]);
    }
    w.EndArray().EndObject();
    if (!json) {
      PrintTreeText(o.path, info, *storage);
    }
  }
  w.EndArray();
  if (auto s = ListRntuples(f, json, w); !s.has_value()) {
    return ReportError(std::move(s).error().AddContext("file " + path));
  }
  w.EndObject();
  if (json) {
    std::printf("%s\n", w.str().c_str());
  }
  return kExitOk;
}

Result<rootio::EntryRange> ParseEntries(const std::string& text, int64_t entries) {
  rootio::EntryRange r{0, entries};
  if (text.empty()) {
    return r;
  }
  auto parts = Split(text, ':');
  if (parts.size() == 1) {
    int64_t a = FERRY_TRY(ParseInt(parts[0]));
    r = {a, a + 1};
  } else if (parts.size() == 2) {
    if (!parts[0].empty()) {
      r.begin = FERRY_TRY(ParseInt(parts[0]));
    }
    if (!parts[1].empty()) {
      r.end = FERRY_TRY(ParseInt(parts[1]));
    }
  } else {
    return InvalidArgumentError("--entries takes A:B");
  }
  if (r.begin < 0 || r.end < 0) {
    return InvalidArgumentError("--entries must not be negative");
  }
  r.end = std::min(r.end, entries);
  r.begin = std::min(r.begin, r.end);
  return r;
}

int RunDumpRntuple(const std::string& path,
                   const rootio::RootFile& file,
                   const std::string& name,
                   const Args& args) {
  auto ntuple = rootio::Rntuple::Open(file, name);
  if (!ntuple.has_value()) {
    return ReportError(std::move(ntuple).error().AddContext("file " + path));
  }
  auto range =
      ParseEntries(args.GetOr("--entries", ""), static_cast<int64_t>((*ntuple)->entries()));
  if (!range.has_value()) {
    return UsageError(range.error().message(), args.spec());
  }
  auto s = DumpRntuple(**ntuple, *range, args.All("--branch"), args.Has("--json"));
  if (!s.has_value()) {
    return ReportError(std::move(s).error().AddContext("file " + path));
  }
  return kExitOk;
}

// The branches ferry root dump shows: those asked for (--branch, by branch or leaf name), or
// every readable top-level branch (the others named on stderr).
Result<std::vector<int32_t>> ChooseBranches(const Args& args,
                                            const rootio::TreeInfo& info,
                                            const std::string& tree_path,
                                            const std::string& path) {
  std::vector<int32_t> branches;
  for (const std::string& name : args.All("--branch")) {
    int32_t b = info.FindBranch(name);
    if (b < 0) {
      int32_t leaf = info.FindLeaf(name);
      if (leaf >= 0) {
        b = info.leaves[static_cast<size_t>(leaf)].branch;
      }
    }
    if (b < 0) {
      // NOLINTNEXTLINE(performance-inefficient-string-concatenation): once, on the way out
      return NotFoundError("tree " + tree_path + " has no branch '" + name + "'")
          .AddContext("file " + path);
    }
    branches.push_back(b);
  }
  if (args.All("--branch").empty()) {
    for (int32_t b : info.top_branches) {
      if (info.branches[static_cast<size_t>(b)].supported) {
        branches.push_back(b);
      } else {
        std::fprintf(stderr, "ferry: skipping branch %s: %s\n",
                     info.branches[static_cast<size_t>(b)].name.c_str(),
                     info.branches[static_cast<size_t>(b)].unsupported_reason.c_str());
      }
    }
  }
  return branches;
}

// One branch's values over range: into w, and (text) as a line on stdout.
Status DumpBranch(const rootio::Tree& t,
                  const std::string& tree_path,
                  int32_t bi,
                  const rootio::EntryRange& range,
                  bool json,
                  JsonWriter& w) {
  const rootio::TreeInfo& info = t.info();
  const rootio::Branch& b = info.branches[static_cast<size_t>(bi)];
  std::vector<rootio::Column> cols;
  for (int32_t li : b.leaves) {
    auto col = t.ReadLeaf(li, range);
    if (!col.has_value()) {
      return std::move(col).error().AddContext("TTree " + tree_path);
    }
    cols.push_back(std::move(*col));
  }
  w.Key(b.name).BeginArray();
  for (int64_t e = 0; e < range.size(); ++e) {
    if (cols.size() == 1) {
      WriteEntry(w, cols[0], e);
    } else {
      w.BeginObject();
      for (size_t k = 0; k < cols.size(); ++k) {
        w.Key(info.leaves[static_cast<size_t>(b.leaves[k])].name);
        WriteEntry(w, cols[k], e);
      }
      w.EndObject();
    }
  }
  w.EndArray();
  if (!json) {
    JsonWriter line;
    line.BeginArray();
    for (int64_t e = 0; e < range.size(); ++e) {
      if (cols.size() == 1) {
        WriteEntry(line, cols[0], e);
      }
    }
    line.EndArray();
    std::printf("%s: %s\n", b.name.c_str(),
                cols.size() == 1 ? line.str().c_str() : "(leaf list; use --json)");
  }
  return OkStatus();
}

int RunDump(const std::string& path, const Args& args) {
  auto file = OpenRootFile(path);
  if (!file.has_value()) {
    return ReportError(file.error());
  }
  auto ntuples = rootio::RntupleNames(**file);
  if (!ntuples.has_value()) {
    return ReportError(ntuples.error());
  }
  std::string tree_path = args.GetOr("--tree", "");
  if (tree_path.empty()) {
    auto trees = (*file)->TreePaths();
    if (!trees.has_value()) {
      return ReportError(trees.error());
    }
    trees->insert(trees->end(), ntuples->begin(), ntuples->end());
    if (trees->size() != 1) {
      return UsageError("the file has " + std::to_string(trees->size())
                            + " trees and RNTuples; choose one with --tree",
                        args.spec());
    }
    tree_path = trees->front();
  }
  if (std::find(ntuples->begin(), ntuples->end(), tree_path) != ntuples->end()) {
    return RunDumpRntuple(path, **file, tree_path, args);
  }
  auto tree = (*file)->OpenTree(tree_path);
  if (!tree.has_value()) {
    return ReportError(tree.error());
  }
  const rootio::Tree& t = **tree;
  const rootio::TreeInfo& info = t.info();
  auto range = ParseEntries(args.GetOr("--entries", ""), info.entries);
  if (!range.has_value()) {
    return UsageError(range.error().message(), args.spec());
  }
  auto branches = ChooseBranches(args, info, tree_path, path);
  if (!branches.has_value()) {
    return ReportError(branches.error());
  }
  bool json = args.Has("--json");
  JsonWriter w;
  w.BeginObject()
      .Field("tree", tree_path)
      .Key("entries")
      .BeginArray()
      .Int(range->begin)
      .Int(range->end)
      .EndArray();
  w.Key("branches").BeginObject();
  for (int32_t bi : *branches) {
    if (Status st = DumpBranch(t, tree_path, bi, *range, json, w); !st.has_value()) {
      return ReportError(std::move(st).error().AddContext("file " + path));
    }
  }
  w.EndObject().EndObject();
  if (json) {
    std::printf("%s\n", w.str().c_str());
  }
  return kExitOk;
}

int RunBaskets(const std::string& path, const Args& args) {
  auto file = OpenRootFile(path);
  if (!file.has_value()) {
    return ReportError(file.error());
  }
  auto tree = (*file)->OpenTree(args.GetOr("--tree", "Events"));
  if (!tree.has_value()) {
    return ReportError(tree.error());
  }
  const rootio::TreeInfo& info = (*tree)->info();
  std::vector<int32_t> branches;
  for (const std::string& name : args.All("--branch")) {
    const int32_t b = info.FindBranch(name);
    if (b < 0) {
      return ReportError(NotFoundError("no branch '" + name + "'").AddContext("file " + path));
    }
    branches.push_back(b);
  }
  JsonWriter w;
  w.BeginObject().Field("file", path).Field("bytes", (*file)->source().size());
  w.Key("clusters").BeginArray();
  for (const rootio::EntryRange& cluster : info.Clusters()) {
    w.BeginArray();
    for (int32_t b : branches) {
      for (size_t k : (*tree)->BasketsOverlapping(b, cluster)) {
        const rootio::BasketRef& ref = info.branches[static_cast<size_t>(b)].baskets[k];
        if (ref.seek != 0) {
          w.BeginArray().Uint(ref.seek).Uint(ref.bytes).EndArray();
        }
      }
    }
    w.EndArray();
  }
  w.EndArray().EndObject();
  std::printf("%s\n", w.str().c_str());
  return kExitOk;
}

// The one FILE every root command takes, or a usage error.
const std::string* OneFile(const Args& args, int* rc) {
  if (args.positional().size() != 1) {
    *rc = UsageError("expected one FILE", args.spec());
    return nullptr;
  }
  return &args.positional()[0];
}

int Ls(const Args& args) {
  int rc = kExitOk;
  const std::string* path = OneFile(args, &rc);
  return path == nullptr ? rc : RunLs(*path, args.Has("--json"));
}

int Dump(const Args& args) {
  int rc = kExitOk;
  const std::string* path = OneFile(args, &rc);
  return path == nullptr ? rc : RunDump(*path, args);
}

int Baskets(const Args& args) {
  int rc = kExitOk;
  const std::string* path = OneFile(args, &rc);
  return path == nullptr ? rc : RunBaskets(*path, args);
}

constexpr OptionSpec kJson = {"--json", "", "print one JSON document"};

constexpr OptionSpec kLsOptions[] = {kJson};

constexpr OptionSpec kDumpOptions[] = {
    {"--tree", "T", "the tree or RNTuple to print", "the file's only tree or RNTuple"},
    {"--branch", "B",
     "a branch (or a leaf of a leaf list, or an RNTuple field: a.b for a subfield) to print; "
     "repeat for more",
     "every readable top-level branch"},
    {"--entries", "A:B",
     "the half-open entry range [A, B); A alone is one entry; A: and :B "
     "leave one end open",
     "all entries"},
    kJson,
};

constexpr OptionSpec kBasketsOptions[] = {
    {"--tree", "T", "the tree whose baskets to list", "Events"},
    {"--branch", "B", "a branch whose baskets to list; repeat for more"},
};

constexpr CommandSpec kLs{
    .path = "root ls",
    .summary =
        "list the objects of a ROOT file and, per TTree branch, its type, shape, baskets, "
        "stored and uncompressed bytes and codec; per RNTuple its fields and columns",
    .synopsis = "FILE",
    .options = kLsOptions,
    .run = Ls,
};

constexpr CommandSpec kDump{
    .path = "root dump",
    .summary =
        "print the values of branches of a tree (or fields of an RNTuple), one line per "
        "branch (or JSON)",
    .synopsis = "FILE",
    .options = kDumpOptions,
    .run = Dump,
};

constexpr CommandSpec kBaskets{
    .path = "root baskets",
    .summary =
        "JSON: per cluster, the [offset, bytes] of the baskets of the branches: the vector "
        "read of a reader that reads one cluster at a time",
    .synopsis = "FILE --branch B...",
    .options = kBasketsOptions,
    .run = Baskets,
};

constexpr const CommandSpec* kRootSubcommands[] = {&kLs, &kDump, &kBaskets};

}  // namespace

constexpr CommandSpec kRootCommand{
    .path = "root",
    .summary = "inspect ROOT files",
    .notes = "FILE is a local path or a root:// URL (read through XrdCl and its plug-ins).",
    .subcommands = kRootSubcommands,
};

}  // namespace ferry::cli
