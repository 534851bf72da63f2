// ferry store convert|get|scan|info|verify: the event store (docs/format/store.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "base/progress.h"
#include "base/strings.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/store_cli.h"
#include "cli/value_format.h"
#include "rootwrite/dataset_writer.h"
#include "store/converter.h"
#include "store/copies.h"
#include "store/event_list.h"
#include "store/pick.h"
#include "store/selection.h"
#include "store/store.h"
#include "xrd/open_source.h"

namespace ferry::cli {

// DIR may be a root:// URL: the store's files are then read through XrdCl (and the ferry
// cache plug-in when it is enabled), loaded only for such URLs.
Result<std::unique_ptr<store::Store>> OpenStore(const std::string& dir, const Args& args) {
  store::StoreOptions o;
  o.mode = args.Has("--mmap") ? store::IoMode::kMmap : store::IoMode::kPread;
  if (xrd::IsXrootdUrl(dir)) {
    o.open = [](const std::string& path, store::IoMode) {
      return xrd::OpenSource(path);
    };
  }
  return store::Store::Open(dir, o);
}

namespace {

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view p : Split(text, ',')) {
    if (!p.empty()) {
      out.emplace_back(p);
    }
  }
  return out;
}

void WriteStats(JsonWriter& w, const store::StoreStats& s) {
  w.Key("io").BeginObject();
  w.Field("reads", s.reads).Field("requests", s.requests).Field("views", s.views);
  w.Field("bytes", s.bytes);
  w.Field("record_reads", s.record_reads).Field("block_reads", s.block_reads);
  w.Field("number_reads", s.number_reads).Field("chunks_decompressed", s.chunks_decompressed);
  w.Field("cache_hits", s.cache_hits).Field("shards_attached", s.shards_attached);
  w.EndObject();
}

// The options of store convert (append: store append) into o; kExitOk, or the usage error's
// exit code.
int ParseConvertOptions(const Args& args, bool append, store::ConvertOptions* o) {
  o->inputs = args.positional();
  if (append) {
    if (o->inputs.size() < 2) {
      return UsageError("store append needs DIR and at least one INPUT.root", args.spec());
    }
    o->out_dir = o->inputs.front();
    o->inputs.erase(o->inputs.begin());
    o->append = true;
    o->replace_runs = args.Has("--replace-run");
  } else {
    if (o->inputs.empty()) {
      return UsageError("store convert needs at least one INPUT.root", args.spec());
    }
    auto out = args.Get("--out");
    if (!out) {
      return UsageError("store convert needs --out DIR", args.spec());
    }
    o->out_dir = *out;
    o->j_chunks = args.Has("--scan-copy");
  }
  o->tree = args.GetOr("--tree", "Events");
  if (auto bs = args.Get("--block-size")) {
    auto v = ParseSize(*bs);
    if (!v || *v == 0 || *v > (1u << 30)) {
      return UsageError("--block-size takes a size such as 64K (at most 1G)", args.spec());
    }
    o->block_size = static_cast<uint32_t>(*v);
  }
  if (auto c = args.Get("--codec")) {
    auto s = codec::Setting::Parse(*c);
    if (!s || s->algorithm == codec::Algorithm::kOldRoot) {
      return UsageError("--codec takes zstd[:L], lz4[:L], zlib[:L], lzma[:L] or none", args.spec());
    }
    o->codec = *s;
  }
  if (auto t = args.Get("--threads")) {
    auto v = ParseInt(*t);
    if (!v || *v < 1 || *v > 256) {
      return UsageError("--threads takes 1..256", args.spec());
    }
    o->threads = static_cast<size_t>(*v);
  }
  return kExitOk;
}

// Rates in bytes of the input files per second: the conversion's wall clock, and the
// reader's decoding alone (its CPU time summed over the threads, i.e. one core's rate).
struct ConvertRates {
  double in;
  double rate;
  double decode_rate;
};

ConvertRates RatesOf(const store::ConvertReport& rep) {
  const auto in = static_cast<double>(rep.input_bytes);
  return {in, in / std::max(1e-9, rep.seconds), in / std::max(1e-9, rep.decode_cpu_seconds)};
}

void PrintConvertJson(const std::string& out_dir, const store::ConvertReport& rep) {
  const store::Manifest& m = rep.manifest;
  const auto [in, rate, decode_rate] = RatesOf(rep);
  JsonWriter w;
  w.BeginObject().Field("out", out_dir).Field("events", m.events);
  w.Field("events_written", rep.events_written);
  w.Field("runs", static_cast<uint64_t>(m.runs.size())).Field("padding", m.padding);
  w.Key("new_runs").BeginArray();
  for (uint64_t r : rep.new_runs) {
    w.Uint(r);
  }
  w.EndArray().Key("replaced_runs").BeginArray();
  for (uint64_t r : rep.replaced_runs) {
    w.Uint(r);
  }
  w.EndArray();
  w.Field("version", static_cast<uint64_t>(m.version));
  w.Field("codec", m.codec.ToString()).Field("block_size", static_cast<uint64_t>(m.block_size));
  w.Field("events_per_e_block", uint64_t{1} << m.log2_kc)
      .Field("events_per_s_block", uint64_t{1} << m.log2_ks);
  w.Field("scan_copy", m.j_chunks());
  w.Field("input_bytes", rep.input_bytes).Field("store_bytes", rep.store_bytes);
  w.Field("size_ratio", static_cast<double>(rep.store_bytes) / std::max(1.0, in));
  w.Field("seconds", rep.seconds).Field("decode_cpu_seconds", rep.decode_cpu_seconds);
  w.Field("threads", static_cast<uint64_t>(rep.threads));
  w.Field("mb_per_second", rate / 1e6).Field("reader_decode_mb_per_second", decode_rate / 1e6);
  w.Field("rate_ratio", rate / decode_rate);
  w.Field("verified_bytes", rep.verified_bytes)
      .Field("skipped_columns", static_cast<uint64_t>(rep.skipped.size()));
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

void PrintConvertText(const std::string& out_dir, const store::ConvertReport& rep) {
  const store::Manifest& m = rep.manifest;
  const auto [in, rate, decode_rate] = RatesOf(rep);
  std::printf(
      "%s: %llu events (%llu written), %zu runs, %zu columns (%zu collections), %s -> "
      "%s store (%.2fx) in %.2f s\n",
      out_dir.c_str(), static_cast<unsigned long long>(m.events),
      static_cast<unsigned long long>(rep.events_written), m.runs.size(), m.schema.columns.size(),
      m.schema.groups(), HumanBytes(in).c_str(),
      HumanBytes(static_cast<double>(rep.store_bytes)).c_str(),
      static_cast<double>(rep.store_bytes) / std::max(1.0, in), rep.seconds);
  std::printf(
      "rate: %.1f MB/s of input on %zu threads; ferry's reader decodes it at %.1f MB/s "
      "per core (ratio %.2f)\n",
      rate / 1e6, rep.threads, decode_rate / 1e6, rate / decode_rate);
  std::printf(
      "verified: every block decompressed again and compared while writing, %s read "
      "back and CRC-checked\n",
      HumanBytes(static_cast<double>(rep.verified_bytes)).c_str());
}

int RunConvert(const Args& args, bool append) {
  store::ConvertOptions o;
  if (int rc = ParseConvertOptions(args, append, &o); rc != kExitOk) {
    return rc;
  }
  std::unique_ptr<Progress> progress;
  o.progress = [&](uint64_t done, uint64_t total) {
    if (progress == nullptr) {
      progress = std::make_unique<Progress>(append ? "append" : "convert", total, "events");
    }
    progress->Set(done);
  };
  auto rep = store::Convert(o);
  progress.reset();
  if (!rep.has_value()) {
    return ReportError(rep.error());
  }
  for (const std::string& s : rep->skipped) {
    std::fprintf(stderr, "ferry: not stored: %s\n", s.c_str());
  }
  if (args.Has("--json")) {
    PrintConvertJson(o.out_dir, *rep);
  } else {
    PrintConvertText(o.out_dir, *rep);
  }
  return kExitOk;
}

Result<std::vector<store::EventId>> EventList(const Args& args) {
  std::vector<store::EventId> ids;
  for (const std::string& e : args.All("--event")) {
    ids.push_back(FERRY_TRY(store::ParseEventId(e)));
  }
  if (auto file = args.Get("--events-file")) {
    std::ifstream in(*file, std::ios::binary);
    if (!in) {
      return NotFoundError("cannot read events file " + *file);
    }
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::vector<store::EventId> listed = FERRY_TRY_CTX(store::ParseEventList(text), *file);
    ids.insert(ids.end(), listed.begin(), listed.end());
  }
  return ids;
}

int RunGet(const std::string& dir, const Args& args) {
  auto ids = EventList(args);
  if (!ids.has_value()) {
    return UsageError(ids.error().ToString(), args.spec());
  }
  if (ids->empty()) {
    return UsageError("store get needs --event RUN:LUMI:EVENT or --events-file LIST", args.spec());
  }
  auto st = OpenStore(dir, args);
  if (!st.has_value()) {
    return ReportError(st.error());
  }
  store::Store& s = **st;
  auto cols = s.ResolveColumns(SplitList(args.GetOr("--columns", "")));
  if (!cols.has_value()) {
    return ReportError(cols.error());
  }
  std::vector<store::EventId> found;
  for (const store::EventId& id : *ids) {
    auto has = s.Contains(id);
    if (!has.has_value()) {
      return ReportError(has.error());
    }
    if (!*has) {
      if (!args.Has("--skip-missing")) {
        return ReportError(NotFoundError("event " + id.ToString() + " is not in the store " + dir));
      }
      std::fprintf(stderr, "ferry: skipping event %s: not in the store\n", id.ToString().c_str());
      continue;
    }
    found.push_back(id);
  }
  if (args.Has("--format") && !args.Has("--out")) {
    return UsageError("--format goes with --out", args.spec());
  }
  if (auto out = args.Get("--out")) {
    const std::string name = args.GetOr("--format", "ttree");
    Result<rootwrite::DatasetFormat> format = rootwrite::ParseDatasetFormat(name);
    if (!format.has_value()) {
      return UsageError("--format is ttree or rntuple, not '" + name + "'", args.spec());
    }
    auto rep = store::WritePicked(s, found, args.Has("--columns") ? *cols : std::vector<int32_t>{},
                                  *out, {codec::Algorithm::kZstd, 5}, *format);
    if (!rep.has_value()) {
      return ReportError(rep.error());
    }
    std::printf("%s: %llu events, %llu branches, %s\n", out->c_str(),
                static_cast<unsigned long long>(rep->events),
                static_cast<unsigned long long>(rep->branches),
                HumanBytes(static_cast<double>(rep->bytes)).c_str());
    return kExitOk;
  }
  std::vector<rootio::Column> values;
  if (auto r = s.ReadEvents(found, *cols, &values); !r.has_value()) {
    return ReportError(r.error());
  }
  const bool json = args.Has("--json");
  JsonWriter w;
  w.BeginObject().Key("events").BeginArray();
  for (size_t i = 0; i < found.size(); ++i) {
    const store::EventId& id = found[i];
    JsonWriter line;
    JsonWriter& out = json ? w : line;
    out.BeginObject();
    out.Field("run", id.run).Field("luminosityBlock", id.lumi).Field("event", id.event);
    for (size_t k = 0; k < cols->size(); ++k) {
      const std::string& name = s.schema().columns[static_cast<size_t>((*cols)[k])].name;
      if (name == "run" || name == "luminosityBlock" || name == "event") {
        continue;
      }
      out.Key(name);
      WriteEntry(out, values[k], static_cast<int64_t>(i));
    }
    out.EndObject();
    if (!json) {
      std::printf("%s %s\n", id.ToString().c_str(), line.str().c_str());
    }
  }
  w.EndArray();
  WriteStats(w, s.stats());
  w.EndObject();
  if (json) {
    std::printf("%s\n", w.str().c_str());
  }
  return kExitOk;
}

// The selected values of one shown column, and what scan prints of them.
struct Summary {
  std::string name;
  std::vector<double> values;
};

struct ScanCounts {
  uint64_t total = 0;
  uint64_t selected = 0;
};

// Scans the store for cols plus the columns the selection needs, collecting the values of
// the selected events into sums (one per shown column).
Status CollectSelected(store::Store& s,
                       std::span<const int32_t> cols,
                       const store::Selection& sel,
                       const store::ScanOptions& options,
                       store::ScanReport* report,
                       std::vector<Summary>* sums,
                       ScanCounts* counts) {
  // Read the shown columns plus those the selection needs.
  std::vector<int32_t> read(cols.begin(), cols.end());
  std::vector<size_t> sel_at;
  for (int32_t c : sel.columns()) {
    auto it = std::find(read.begin(), read.end(), c);
    if (it == read.end()) {
      read.push_back(c);
      it = read.end() - 1;
    }
    sel_at.push_back(static_cast<size_t>(it - read.begin()));
  }
  std::vector<const rootio::Column*> sel_values(sel_at.size());
  std::vector<uint8_t> mask;
  return s.Scan(
      read,
      [&](const store::ScanBatch& b) {
        for (size_t k = 0; k < sel_at.size(); ++k) {
          sel_values[k] = &b.columns[sel_at[k]];
        }
        sel.EvaluateBatch(sel_values, b.events, &mask);
        for (int64_t i = 0; i < b.events; ++i) {
          if (mask[static_cast<size_t>(i)] == 0) {
            continue;
          }
          ++counts->selected;
          for (size_t k = 0; k < sums->size(); ++k) {
            auto [lo, hi] = b.columns[k].EntryValues(i);
            for (uint64_t v = lo; v < hi; ++v) {
              (*sums)[k].values.push_back(b.columns[k].AsDouble(v));
            }
          }
        }
        counts->total += static_cast<uint64_t>(b.events);
        return OkStatus();
      },
      options, report);
}

// One column's statistics and histogram: into w, and (text) on stdout.
void ReportSummary(const Summary& sm, int bins, bool json, JsonWriter& w) {
  double sum = 0;
  double sum2 = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (double v : sm.values) {
    sum += v;
    sum2 += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const auto n = static_cast<double>(sm.values.size());
  const double mean = sm.values.empty() ? 0 : sum / n;
  const double rms = sm.values.empty() ? 0 : std::sqrt(std::max(0.0, sum2 / n - mean * mean));
  std::vector<uint64_t> hist(static_cast<size_t>(bins), 0);
  const double width = hi > lo ? (hi - lo) / bins : 1;
  for (double v : sm.values) {
    if (std::isfinite(v)) {
      auto k = static_cast<size_t>(std::min<double>(bins - 1, std::floor((v - lo) / width)));
      ++hist[k];
    }
  }
  w.BeginObject().Field("name", sm.name).Field("entries", static_cast<uint64_t>(sm.values.size()));
  w.Field("mean", mean)
      .Field("rms", rms)
      .Field("min", sm.values.empty() ? 0.0 : lo)
      .Field("max", sm.values.empty() ? 0.0 : hi);
  w.Key("histogram").BeginArray();
  for (uint64_t h : hist) {
    w.Uint(h);
  }
  w.EndArray().EndObject();
  if (json) {
    return;
  }
  std::printf("\n%s: %zu values, mean %.6g, rms %.6g, min %.6g, max %.6g\n", sm.name.c_str(),
              sm.values.size(), mean, rms, lo, hi);
  uint64_t top = *std::max_element(hist.begin(), hist.end());
  for (int k = 0; k < bins && !sm.values.empty(); ++k) {
    int bar = top == 0 ? 0 : static_cast<int>(40 * hist[static_cast<size_t>(k)] / top);
    std::printf("  [%12.5g, %12.5g) %10llu %s\n", lo + k * width, lo + (k + 1) * width,
                static_cast<unsigned long long>(hist[static_cast<size_t>(k)]),
                std::string(static_cast<size_t>(bar), '#').c_str());
  }
}

// On stderr (stdout stays the scan's result): copies that failed a check, collection columns
// read from the E blocks, and the copies the scan built or could not build.
void ReportScanCopies(const std::string& dir,
                      const store::Schema& schema,
                      const store::ScanReport& rep,
                      bool asked) {
  for (const Error& e : rep.copy_errors) {
    std::fprintf(stderr, "ferry store scan: error: %s; read the E blocks instead\n",
                 e.ToString().c_str());
  }
  for (const store::ScanColumnReport& c : rep.columns) {
    if (c.shards_from_blocks == 0 || c.copies_built == c.shards_from_blocks) {
      continue;
    }
    const std::string& name = schema.columns[static_cast<size_t>(c.column)].name;
    const uint64_t shards = c.shards_from_blocks + c.shards_from_copies;
    std::fprintf(stderr,
                 "ferry store scan: %s has no column copy in %llu of %llu shards and was read "
                 "from the E blocks (every column of every event); --build-copies or `ferry "
                 "store copies %s --add %s` makes one\n",
                 name.c_str(), static_cast<unsigned long long>(c.shards_from_blocks),
                 static_cast<unsigned long long>(shards), dir.c_str(), name.c_str());
  }
  if (!rep.not_built.empty() && asked) {
    std::fprintf(stderr, "ferry store scan: column copies not built: %s\n", rep.not_built.c_str());
  }
  if (rep.published.has_value()) {
    const store::CopiesChange& ch = *rep.published;
    std::fprintf(stderr,
                 "ferry store scan: built %zu column copies; copies now take %s of a %s budget\n",
                 ch.added.size(), HumanBytes(static_cast<double>(ch.copy_bytes)).c_str(),
                 HumanBytes(static_cast<double>(ch.budget)).c_str());
    for (const store::CopyEntry& e : ch.evicted) {
      std::fprintf(stderr, "ferry store scan: evicted the copy of %s in run %llu (budget)\n",
                   schema.columns[e.column].name.c_str(), static_cast<unsigned long long>(e.run));
    }
  }
}

void WriteScanCopies(JsonWriter& w, const store::Schema& schema, const store::ScanReport& rep) {
  w.Key("copies").BeginObject().Key("columns").BeginArray();
  for (const store::ScanColumnReport& c : rep.columns) {
    w.BeginObject()
        .Field("name", schema.columns[static_cast<size_t>(c.column)].name)
        .Field("shards_from_copies", c.shards_from_copies)
        .Field("shards_from_blocks", c.shards_from_blocks)
        .Field("copies_built", c.copies_built)
        .EndObject();
  }
  w.EndArray().Key("errors").BeginArray();
  for (const Error& e : rep.copy_errors) {
    w.String(e.ToString());
  }
  w.EndArray().Field("not_built", rep.not_built);
  const uint64_t evicted = rep.published ? rep.published->evicted.size() : 0;
  w.Field("evicted", evicted).EndObject();
}

// --build-copies, or `column_copies = auto` in a local store's conf.
Result<store::ScanOptions> ScanOptionsFor(const std::string& dir,
                                          const store::Store& s,
                                          const Args& args) {
  store::ScanOptions options;
  options.build_copies = args.Has("--build-copies");
  if (s.local() && !options.build_copies) {
    options.build_copies = FERRY_TRY(store::ReadCopiesConf(dir)).auto_build;
  }
  return options;
}

int RunScan(const std::string& dir, const Args& args) {
  auto st = OpenStore(dir, args);
  if (!st.has_value()) {
    return ReportError(st.error());
  }
  store::Store& s = **st;
  auto cols = s.ResolveColumns(SplitList(args.GetOr("--columns", "")));
  if (!cols.has_value()) {
    return ReportError(cols.error());
  }
  if (!args.Has("--columns")) {
    return UsageError("store scan needs --columns A,B", args.spec());
  }
  auto sel = store::Selection::Parse(args.GetOr("--where", ""), s.schema());
  if (!sel.has_value()) {
    return UsageError(sel.error().message(), args.spec());
  }
  int bins = 20;
  if (auto b = args.Get("--bins")) {
    auto v = ParseInt(*b);
    if (!v || *v < 1 || *v > 1000) {
      return UsageError("--bins takes 1..1000", args.spec());
    }
    bins = static_cast<int>(*v);
  }
  std::vector<Summary> sums(cols->size());
  for (size_t k = 0; k < cols->size(); ++k) {
    sums[k].name = s.schema().columns[static_cast<size_t>((*cols)[k])].name;
  }
  auto options = ScanOptionsFor(dir, s, args);
  if (!options.has_value()) {
    return ReportError(options.error());
  }
  store::ScanReport report;
  ScanCounts counts;
  auto t0 = std::chrono::steady_clock::now();
  auto r = CollectSelected(s, *cols, *sel, *options, &report, &sums, &counts);
  if (!r.has_value()) {
    return ReportError(r.error());
  }
  ReportScanCopies(dir, s.schema(), report, args.Has("--build-copies"));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool json = args.Has("--json");
  JsonWriter w;
  w.BeginObject()
      .Field("events", counts.total)
      .Field("selected", counts.selected)
      .Field("where", args.GetOr("--where", ""));
  w.Field("seconds", secs);
  w.Key("columns").BeginArray();
  if (!json) {
    std::printf("%llu of %llu events selected (%.3f s)\n",
                static_cast<unsigned long long>(counts.selected),
                static_cast<unsigned long long>(counts.total), secs);
  }
  for (const Summary& sm : sums) {
    ReportSummary(sm, bins, json, w);
  }
  w.EndArray();
  WriteScanCopies(w, s.schema(), report);
  WriteStats(w, s.stats());
  w.EndObject();
  if (json) {
    std::printf("%s\n", w.str().c_str());
  }
  return kExitOk;
}

void PrintCopiesLine(const std::string& dir, const store::Manifest& m) {
  if (m.copies.empty()) {
    return;
  }
  uint64_t copy_bytes = 0;
  for (const store::CopyEntry& c : m.copies) {
    copy_bytes += c.bytes;
  }
  std::printf("column copies: %zu (%s; `ferry store copies %s --list`)\n", m.copies.size(),
              HumanBytes(static_cast<double>(copy_bytes)).c_str(), dir.c_str());
}

int RunInfo(const std::string& dir, const Args& args) {
  auto st = OpenStore(dir, args);
  if (!st.has_value()) {
    return ReportError(st.error());
  }
  const store::Manifest& m = (*st)->manifest();
  // Version 3 shards have their own extents: the grid is the sum of their slots.
  const uint64_t grid =
      m.version >= 3 ? m.events + m.padding : m.run_extent * m.lumi_extent * m.event_extent;
  uint64_t bytes = 0;
  uint64_t lumis = 0;
  for (const store::RunEntry& r : m.runs) {
    bytes += r.shard_bytes;
    lumis += r.lumis;
  }
  const double pad_pct =
      grid == 0 ? 0 : 100.0 * static_cast<double>(m.padding) / static_cast<double>(grid);
  const bool no_lumi = (m.flags & store::kManifestFlagNoLumi) != 0;
  if (args.Has("--json")) {
    JsonWriter w;
    w.BeginObject()
        .Field("dir", dir)
        .Field("version", static_cast<uint64_t>(m.version))
        .Field("tree", m.tree);
    w.Field("events", m.events)
        .Field("runs", static_cast<uint64_t>(m.runs.size()))
        .Field("lumis", lumis);
    w.Key("extents")
        .BeginArray()
        .Uint(m.run_extent)
        .Uint(m.lumi_extent)
        .Uint(m.event_extent)
        .EndArray();
    w.Field("grid_slots", grid).Field("padding", m.padding).Field("padding_percent", pad_pct);
    w.Field("record_size", static_cast<uint64_t>(m.record_size()))
        .Field("scan_copy", m.j_chunks())
        .Field("codec", m.codec.ToString());
    w.Field("block_size", static_cast<uint64_t>(m.block_size));
    w.Field("events_per_s_block", uint64_t{1} << m.log2_ks)
        .Field("events_per_c_block", uint64_t{1} << m.log2_kc)
        .Field("events_per_e_block", uint64_t{1} << m.log2_kc);
    w.Field("columns", static_cast<uint64_t>(m.schema.columns.size()));
    w.Field("fixed_columns", static_cast<uint64_t>(m.schema.fixed.size()));
    w.Field("jagged_columns", static_cast<uint64_t>(m.schema.jagged.size()));
    w.Field("collections", static_cast<uint64_t>(m.schema.groups())).Field("bytes", bytes);
    w.Field("luminosityBlock_in_input", !no_lumi);
    w.Key("run_table").BeginArray();
    for (const store::RunEntry& r : m.runs) {
      w.BeginObject()
          .Field("run", r.run)
          .Field("events", r.events)
          .Field("lumis", r.lumis)
          .Field("bytes", r.shard_bytes)
          .EndObject();
    }
    w.EndArray().Key("inputs").BeginArray();
    for (const store::InputEntry& in : m.inputs) {
      w.BeginObject().Field("path", in.path).Field("entries", in.entries).EndObject();
    }
    w.EndArray();
    WriteCopyList(w, store::ListCopies(dir, m, (*st)->local()));
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::printf("%s: ferry event store v%u, tree %s, %llu events in %zu runs, %llu lumis, %s\n",
              dir.c_str(), m.version, m.tree.c_str(), static_cast<unsigned long long>(m.events),
              m.runs.size(), static_cast<unsigned long long>(lumis),
              HumanBytes(static_cast<double>(bytes)).c_str());
  std::printf(
      "grid: %llu runs x %llu lumis x %llu events (%s) = %llu slots, padding %llu (%.1f%%)\n",
      static_cast<unsigned long long>(m.run_extent), static_cast<unsigned long long>(m.lumi_extent),
      static_cast<unsigned long long>(m.event_extent),
      m.version >= 3 ? "largest; each run has its own" : "every run",
      static_cast<unsigned long long>(grid), static_cast<unsigned long long>(m.padding), pad_pct);
  std::printf(
      "records: %u bytes; blocks: %llu events (S: scalars, column-major), %llu events (%s, "
      "target %s); codec %s%s\n",
      m.record_size(), 1ULL << m.log2_ks, 1ULL << m.log2_kc,
      m.version >= 3 ? "E: every column" : "C: collections", HumanBytes(m.block_size).c_str(),
      m.codec.ToString().c_str(), m.j_chunks() ? "; collections also column-major (J chunks)" : "");
  std::printf("columns: %zu fixed, %zu jagged in %zu collections\n", m.schema.fixed.size(),
              m.schema.jagged.size(), m.schema.groups());
  if (no_lumi) {
    std::printf(
        "note: the input had no luminosityBlock; every event has lumi 0 (address as "
        "RUN:0:EVENT)\n");
  }
  PrintCopiesLine(dir, m);
  for (const store::RunEntry& r : m.runs) {
    std::printf("  run %-10llu %10llu events %6llu lumis %10s\n",
                static_cast<unsigned long long>(r.run), static_cast<unsigned long long>(r.events),
                static_cast<unsigned long long>(r.lumis),
                HumanBytes(static_cast<double>(r.shard_bytes)).c_str());
  }
  return kExitOk;
}

int RunVerify(const std::string& dir, const Args& args) {
  auto st = OpenStore(dir, args);
  if (!st.has_value()) {
    return ReportError(st.error());
  }
  auto v = (*st)->Verify();
  if (!v.has_value()) {
    return ReportError(v.error());
  }
  if (args.Has("--json")) {
    JsonWriter w;
    w.BeginObject().Field("ok", true).Field("records", v->records).Field("padding", v->padding);
    w.Field("s_chunks", v->s_chunks)
        .Field("c_blocks", v->c_blocks)
        .Field("copies", v->copies)
        .Field("bytes", v->bytes)
        .EndObject();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf(
        "%s: ok, %llu records, %llu padding slots, %llu S chunks, %llu C blocks, %llu column "
        "copies\n",
        dir.c_str(), static_cast<unsigned long long>(v->records),
        static_cast<unsigned long long>(v->padding), static_cast<unsigned long long>(v->s_chunks),
        static_cast<unsigned long long>(v->c_blocks), static_cast<unsigned long long>(v->copies));
  }
  return kExitOk;
}

// get, scan, info and verify work on one store DIR.
int OnStore(const Args& args, int (*run)(const std::string& dir, const Args& args)) {
  if (args.positional().size() != 1) {
    return UsageError("expected one store DIR", args.spec());
  }
  return run(args.positional()[0], args);
}

int Convert(const Args& args) {
  return RunConvert(args, false);
}
int Append(const Args& args) {
  return RunConvert(args, true);
}
int Get(const Args& args) {
  return OnStore(args, RunGet);
}
int Scan(const Args& args) {
  return OnStore(args, RunScan);
}
int Info(const Args& args) {
  return OnStore(args, RunInfo);
}
int Verify(const Args& args) {
  return OnStore(args, RunVerify);
}

constexpr OptionSpec kJson = {"--json", "", "print one JSON document"};
constexpr OptionSpec kThreads = {"--threads", "N", "threads decoding and compressing (1..256)",
                                 "one per core"};
constexpr OptionSpec kTree = {"--tree", "T", "the tree of the inputs", "Events"};
constexpr OptionSpec kMmap = {"--mmap", "",
                              "read the store's files through mmap: no read system call"};

constexpr OptionSpec kConvertOptions[] = {
    {"--out", "DIR", "the store to write (replaced if it exists)"},
    kTree,
    {"--block-size", "64K", "uncompressed bytes of every column of the events of one E block",
     "64K"},
    {"--codec", "zstd:2", "zstd[:L], lz4[:L], zlib[:L], lzma[:L] or none", "zstd:2"},
    {"--scan-copy", "",
     "also store the collections column-major (J chunks): collection scans read only their "
     "columns, at the price of a second copy"},
    kThreads,
    kJson,
};

constexpr OptionSpec kAppendOptions[] = {
    {"--replace-run", "",
     "a run already in the store is rebuilt from the new inputs' events of the run (without "
     "it, a new event of such a run is an error)"},
    kTree,
    kThreads,
    kJson,
};

constexpr OptionSpec kGetOptions[] = {
    {"--event", "RUN:LUMI:EVENT", "an event to get; repeat for more"},
    {"--events-file", "LIST", "a file of RUN:LUMI:EVENT lines ('#' starts a comment)"},
    {"--columns", "A,B", "the columns to print or write", "every column"},
    {"--json", "", "print the events and the I/O counts as one JSON document"},
    {"--skip-missing", "", "skip events that are not in the store (else: exit 1 naming one)"},
    {"--out", "picked.root", "write the events, in list order, as a flat TTree (or an RNTuple)"},
    {"--format", "F", "with --out: ttree, or rntuple (RVec fields with their cardinalities)",
     "ttree"},
    kMmap,
};

constexpr OptionSpec kScanOptions[] = {
    {"--columns", "A,B", "the columns to summarize: entries, mean, rms, min, max, histogram"},
    {"--where", "EXPR",
     "select events: comparisons of scalar columns and numbers, n(Coll) (the counter of a "
     "collection), &&, ||, !, parentheses; e.g. 'MET_pt > 25 && n(Muon) >= 1'"},
    {"--bins", "N", "histogram bins (1..1000)", "20"},
    {"--build-copies", "",
     "also write a column-major copy of each collection column read from the E blocks, so later "
     "scans read only its bytes (local stores; `column_copies = auto` in DIR/store.conf does it "
     "always)"},
    kJson,
    kMmap,
};

constexpr OptionSpec kInfoOptions[] = {kJson, kMmap};

constexpr CommandSpec kConvert{
    .path = "store convert",
    .summary = "convert ROOT files (any number, any runs, any order) into an event store",
    .synopsis = "INPUT.root... --out DIR",
    .options = kConvertOptions,
    .run = Convert,
};

constexpr CommandSpec kAppend{
    .path = "store append",
    .summary =
        "add the runs of new files to a store as new shards; existing shard files are "
        "never written",
    .synopsis = "DIR INPUT.root...",
    .options = kAppendOptions,
    .run = Append,
};

// --out writes the events to a file and prints a summary line, so a --json beside it would be
// ignored.
constexpr OptionConflict kGetConflicts[] = {{"--out", "--json"}};
constexpr CommandSpec kGet{
    .path = "store get",
    .summary = "pick events by RUN:LUMI:EVENT and print them or write them to a ROOT file",
    .synopsis = "DIR (--event RUN:LUMI:EVENT... | --events-file LIST)",
    .options = kGetOptions,
    .conflicts = kGetConflicts,
    .run = Get,
};

constexpr CommandSpec kScan{
    .path = "store scan",
    .summary = "count the selected events and summarize columns of them",
    .synopsis = "DIR --columns A,B",
    .options = kScanOptions,
    .run = Scan,
};

constexpr CommandSpec kInfo{
    .path = "store info",
    .summary =
        "describe a store: format version, runs, events, extents and padding, codec, columns",
    .synopsis = "DIR",
    .options = kInfoOptions,
    .run = Info,
};

constexpr CommandSpec kVerify{
    .path = "store verify",
    .summary =
        "read every record, block and chunk of a store and check its CRC32C (exit 1 on a bad one)",
    .synopsis = "DIR",
    .options = kInfoOptions,
    .run = Verify,
};

constexpr const CommandSpec* kStoreSubcommands[] = {
    &kConvert, &kAppend, &kGet, &kScan, &kInfo, &kVerify, &kStoreCopiesCommand};

}  // namespace

constexpr CommandSpec kStoreCommand{
    .path = "store",
    .summary = "event store",
    .notes =
        "DIR may be a local directory or a root://host:port//path/to/store URL (info, get, "
        "scan,\nverify, copies --list): the store's files are then read through XrdCl with its "
        "plug-ins,\nand column copies are used but never written.",
    .subcommands = kStoreSubcommands,
};

}  // namespace ferry::cli
