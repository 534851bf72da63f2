// ferry store copies DIR [--add COLS | --drop COLS | --list] [--json]: the column copies of a
// store (docs/format/store.md section 12). --add builds them with a scan of the columns (the
// same code as `store scan --build-copies`), --drop removes them; both publish a new manifest
// under the store's writer lock. --list (the default) works on root:// stores too.
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "base/strings.h"
#include "cli/commands.h"
#include "cli/store_cli.h"

namespace ferry::cli {

void WriteCopyList(JsonWriter& w, std::span<const store::CopyInfo> copies) {
  w.Key("copies").BeginArray();
  for (const store::CopyInfo& c : copies) {
    w.BeginObject()
        .Field("column", c.column)
        .Field("run", c.entry.run)
        .Field("generation", static_cast<uint64_t>(c.entry.generation))
        .Field("file", c.entry.file_name())
        .Field("bytes", c.entry.bytes)
        .Field("last_scanned", static_cast<int64_t>(c.last_scanned))
        .EndObject();
  }
  w.EndArray();
}

namespace {

uint64_t ShardBytes(const store::Manifest& m) {
  uint64_t n = 0;
  for (const store::RunEntry& r : m.runs) {
    n += r.shard_bytes;
  }
  return n;
}

// The collection columns named in a comma list; scalars and fixed arrays are refused (their
// S chunks are column-major already).
Result<std::vector<int32_t>> CollectionColumns(const store::Store& s, const std::string& list) {
  std::vector<std::string> names;
  for (std::string_view p : Split(list, ',')) {
    if (!p.empty()) {
      names.emplace_back(p);
    }
  }
  if (names.empty()) {
    return InvalidArgumentError("expected a comma list of collection columns, e.g. Muon_pt,Jet_pt");
  }
  std::vector<int32_t> cols = FERRY_TRY(s.ResolveColumns(names));
  for (int32_t c : cols) {
    const store::ColumnSpec& spec = s.schema().columns[static_cast<size_t>(c)];
    if (!spec.jagged()) {
      return InvalidArgumentError(spec.name
                                  + " is not a collection column: its S chunks are column-major "
                                    "already");
    }
  }
  return cols;
}

// "2026-12-03 13:10:42 UTC", or "unknown" (0: a remote store, or an unreadable time).
std::string UtcTime(int64_t unix_seconds) {
  if (unix_seconds <= 0) {
    return "unknown";
  }
  const auto t = static_cast<time_t>(unix_seconds);
  struct tm tm {};
  char buf[32];
  if (gmtime_r(&t, &tm) == nullptr
      || std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0) {
    return "unknown";
  }
  return buf;
}

int List(const std::string& dir, store::Store& s, bool json) {
  const store::Manifest& m = s.manifest();
  const std::vector<store::CopyInfo> list = store::ListCopies(dir, m, s.local());
  uint64_t total = 0;
  for (const store::CopyInfo& c : list) {
    total += c.entry.bytes;
  }
  uint64_t budget = 0;
  if (s.local()) {
    auto conf = store::ReadCopiesConf(dir);
    if (!conf.has_value()) {
      return ReportError(conf.error());
    }
    budget = conf->Budget(ShardBytes(m));
  }
  if (json) {
    JsonWriter w;
    w.BeginObject().Field("dir", dir).Field("bytes", total).Field("budget", budget);
    WriteCopyList(w, list);
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::printf("%s: %zu column copies, %s (budget %s)\n", dir.c_str(), list.size(),
              HumanBytes(static_cast<double>(total)).c_str(),
              s.local() ? HumanBytes(static_cast<double>(budget)).c_str() : "n/a remotely");
  for (const store::CopyInfo& c : list) {
    std::printf("  %-24s run %-10llu %10s  last scanned %s  %s\n", c.column.c_str(),
                static_cast<unsigned long long>(c.entry.run),
                HumanBytes(static_cast<double>(c.entry.bytes)).c_str(),
                UtcTime(c.last_scanned).c_str(), c.entry.file_name().c_str());
  }
  return kExitOk;
}

void PrintChange(const store::Schema& schema, const store::CopiesChange& ch, bool json) {
  JsonWriter w;
  w.BeginObject().Field("added", static_cast<uint64_t>(ch.added.size()));
  w.Key("removed").BeginArray();
  for (const store::CopyEntry& e : ch.evicted) {
    w.BeginObject().Field("column", schema.columns[e.column].name).Field("run", e.run).EndObject();
  }
  w.EndArray().Field("bytes", ch.copy_bytes).Field("budget", ch.budget).EndObject();
  if (json) {
    std::printf("%s\n", w.str().c_str());
    return;
  }
  std::printf("%zu copies added, %zu removed; copies take %s of a %s budget\n", ch.added.size(),
              ch.evicted.size(), HumanBytes(static_cast<double>(ch.copy_bytes)).c_str(),
              HumanBytes(static_cast<double>(ch.budget)).c_str());
}

// A scan of the columns that builds every copy they lack (nothing else is computed).
int Add(const std::string& dir, store::Store& s, std::span<const int32_t> cols, bool json) {
  if (s.manifest().j_chunks()) {
    return ReportError(InvalidArgumentError(
        dir + " was converted with --scan-copy: every collection is column-major already"));
  }
  store::ScanReport rep;
  auto done = s.Scan(
      cols, [](const store::ScanBatch&) { return OkStatus(); }, {.build_copies = true}, &rep);
  if (!done.has_value()) {
    return ReportError(done.error());
  }
  for (const Error& e : rep.copy_errors) {
    std::fprintf(stderr, "ferry store copies: error: %s; rebuilt from the E blocks\n",
                 e.ToString().c_str());
  }
  if (!rep.not_built.empty()) {
    return ReportError(Error(ErrorCode::kIo, "no copies built: " + rep.not_built));
  }
  PrintChange(s.schema(), rep.published.value_or(store::CopiesChange{}), json);
  return kExitOk;
}

int Run(const Args& args) {
  if (args.positional().size() != 1) {
    return UsageError("expected one store DIR", args.spec());
  }
  const std::string& dir = args.positional()[0];
  auto st = OpenStore(dir, args);
  if (!st.has_value()) {
    return ReportError(st.error());
  }
  store::Store& s = **st;
  const bool json = args.Has("--json");
  const auto add = args.Get("--add");
  const auto drop = args.Get("--drop");
  if (!add && !drop) {
    return List(dir, s, json);
  }
  if (!s.local()) {
    return ReportError(InvalidArgumentError(dir + " is remote: its copies are never written"));
  }
  auto cols = CollectionColumns(s, add ? *add : *drop);
  if (!cols.has_value()) {
    return UsageError(cols.error().message(), args.spec());
  }
  if (add) {
    return Add(dir, s, *cols, json);
  }
  auto ch = store::DropCopies(dir, *cols);
  if (!ch.has_value()) {
    return ReportError(ch.error());
  }
  PrintChange(s.schema(), *ch, json);
  return kExitOk;
}

constexpr OptionSpec kCopiesOptions[] = {
    {"--add", "A,B", "build the missing copies of these collection columns (every shard)"},
    {"--drop", "A,B", "remove the copies of these collection columns (every shard)"},
    {"--list", "", "list the copies, their sizes and when each was last scanned (the default)"},
    {"--json", "", "print one JSON document"},
};
constexpr OptionConflict kCopiesConflicts[] = {
    {"--add", "--drop"}, {"--add", "--list"}, {"--drop", "--list"}};

}  // namespace

constexpr CommandSpec kStoreCopiesCommand{
    .path = "store copies",
    .summary = "list, add or drop the column-major copies of collection columns that scans use",
    .synopsis = "DIR [--add A,B | --drop A,B]",
    .options = kCopiesOptions,
    .notes =
        "Copies are new files beside the shards, published in the manifest; shard files are "
        "never written.\nDIR/store.conf: `column_copies = auto` makes every scan build the "
        "copies it lacks;\n`column_copies_budget = 15%` (or a size) bounds them, the least "
        "recently scanned dropped first.",
    .conflicts = kCopiesConflicts,
    .run = Run,
};

}  // namespace ferry::cli
