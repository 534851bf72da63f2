// ferry gen nanoaod: write NanoAOD-like datasets of any size from a template file.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/json_writer.h"
#include "base/progress.h"
#include "base/self_exe.h"
#include "base/strings.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "gen/nanoaod_gen.h"
#include "rootwrite/dataset_writer.h"

namespace ferry::cli {
namespace {

// The template shipped with ferry: beside an installed binary (PREFIX/share/ferry), or in the
// source tree a build's binary lives in (build/<preset>/bin -> data/root), unless
// $FERRY_ROOT_DATA_DIR names another folder. The first that exists wins.
std::string DefaultTemplate() {
  constexpr const char* kName = "nanoAOD_2015_CMS_Open_Data_ttbar.root";
  const char* env = std::getenv("FERRY_ROOT_DATA_DIR");  // NOLINT(concurrency-mt-unsafe): read-only
  if (env != nullptr && *env != '\0') {
    return std::string(env) + "/" + kName;
  }
  const std::string bin = ExecutableDir();
  const std::string prefix = bin.substr(0, bin.rfind('/'));
  const std::string source = prefix.substr(0, prefix.rfind('/'));
  for (const std::string& dir :
       {prefix + "/share/ferry", source.substr(0, source.rfind('/')) + "/data/root"}) {
    struct stat st = {};
    if (::stat((dir + "/" + kName).c_str(), &st) == 0) {
      return dir + "/" + kName;
    }
  }
  return std::string("data/root/") + kName;
}

void PrintJson(const gen::GenOptions& o, const gen::GenReport& r) {
  JsonWriter w;
  w.BeginObject().Field("out", o.out_dir).Field("template", o.template_path);
  w.Field("codec", o.codec.ToString()).Field("seed", o.seed);
  w.Field("mode", gen::GenModeName(o.mode)).Field("format", rootwrite::DatasetFormatName(o.format));
  w.Field("events", r.events);
  w.Field("branches", static_cast<uint64_t>(r.branches));
  w.Key("skipped").BeginArray();
  for (const std::string& s : r.skipped) {
    w.String(s);
  }
  w.EndArray();
  w.Field("bytes", r.file_bytes).Field("uncompressed_bytes", r.tot_bytes);
  w.Field("bytes_per_event", static_cast<double>(r.file_bytes) / static_cast<double>(r.events));
  w.Field("seconds", r.seconds);
  w.Field("events_per_second", static_cast<double>(r.events) / r.seconds);
  w.Field("mb_per_second", static_cast<double>(r.file_bytes) / 1e6 / r.seconds);
  w.Key("files").BeginArray();
  for (const gen::GenFile& f : r.files) {
    w.BeginObject().Field("path", f.path).Field("events", f.events).Field("bytes", f.file_bytes);
    w.Field("uncompressed_bytes", f.tot_bytes).Field("cluster_size", f.cluster_size).EndObject();
  }
  w.EndArray();
  w.Key("agc").BeginObject();
  w.Key("branches").BeginArray();
  for (const std::string& b : r.agc.branches) {
    w.String(b);
  }
  w.EndArray().Key("missing").BeginArray();
  for (const std::string& b : r.agc.missing) {
    w.String(b);
  }
  w.EndArray();
  w.Field("selected_bytes", r.agc.selected_bytes).Field("total_bytes", r.agc.total_bytes);
  w.Field("fraction", r.agc.fraction).EndObject();
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

void PrintText(const gen::GenOptions& o, const gen::GenReport& r) {
  const double secs = r.seconds > 0 ? r.seconds : 1e-9;
  std::printf(
      "wrote %zu file(s) to %s: %lld events, %zu branches, %s (%.0f B/event, %s, %s model, "
      "%s) in %.1f s: %.0f events/s, %.1f MB/s\n",
      r.files.size(), o.out_dir.c_str(), static_cast<long long>(r.events), r.branches,
      HumanBytes(static_cast<double>(r.file_bytes)).c_str(),
      static_cast<double>(r.file_bytes) / static_cast<double>(r.events), o.codec.ToString().c_str(),
      std::string(gen::GenModeName(o.mode)).c_str(),
      std::string(rootwrite::DatasetFormatName(o.format)).c_str(), secs,
      static_cast<double>(r.events) / secs, static_cast<double>(r.file_bytes) / 1e6 / secs);
  for (const gen::GenFile& f : r.files) {
    std::printf("  %s  %lld events  %s  clusters of %lld entries\n", f.path.c_str(),
                static_cast<long long>(f.events),
                HumanBytes(static_cast<double>(f.file_bytes)).c_str(),
                static_cast<long long>(f.cluster_size > 0 ? f.cluster_size : f.events));
  }
  if (!r.skipped.empty()) {
    std::printf("  %zu template branch(es) left out (not flat), e.g. %s\n", r.skipped.size(),
                r.skipped.front().c_str());
  }
  std::printf("AGC selection (%zu branches): %.1f%% of the stored bytes (%s of %s)\n",
              r.agc.branches.size(), 100.0 * r.agc.fraction,
              HumanBytes(static_cast<double>(r.agc.selected_bytes)).c_str(),
              HumanBytes(static_cast<double>(r.agc.total_bytes)).c_str());
  if (!r.agc.missing.empty()) {
    std::printf("  not in the schema: %s\n", r.agc.missing.front().c_str());
  }
}

int RunNanoAod(const Args& a) {
  if (!a.positional().empty()) {
    return UsageError("unexpected argument " + a.positional().front(), a.spec());
  }
  gen::GenOptions o;
  o.template_path = a.GetOr("--template", DefaultTemplate());
  auto out = a.Get("--out");
  auto events = a.Get("--events");
  if (!out || !events) {
    return UsageError("--events and --out are required", a.spec());
  }
  o.out_dir = *out;
  auto number = [&](std::string_view opt, int64_t fallback, int64_t lo,
                    int64_t hi) -> Result<int64_t> {
    auto v = a.Get(opt);
    if (!v) {
      return fallback;
    }
    auto n = ParseInt(*v);
    if (!n.has_value() || *n < lo || *n > hi) {
      return InvalidArgumentError("bad value for " + std::string(opt) + ": " + *v);
    }
    return *n;
  };
  auto n_events = number("--events", 0, 1, int64_t{1} << 40);
  auto n_files = number("--files", 1, 1, 100000);
  auto seed = number("--seed", 1, 0, INT64_MAX);
  auto basket = number("--basket-size", 32000, 100, 1 << 30);
  auto flush = number("--auto-flush", -30000000, INT64_MIN / 2, INT64_MAX / 2);
  auto cluster = number("--cluster-bytes", int64_t{128} << 20, 4096, int64_t{1} << 40);
  for (const auto* r : {&n_events, &n_files, &seed, &basket, &flush, &cluster}) {
    if (!r->has_value()) {
      return UsageError(r->error().message(), a.spec());
    }
  }
  o.events = *n_events;
  o.files = static_cast<int32_t>(*n_files);
  o.seed = static_cast<uint64_t>(*seed);
  o.basket_size = static_cast<int32_t>(*basket);
  o.auto_flush = *flush;
  o.cluster_bytes = static_cast<uint64_t>(*cluster);
  auto codec = codec::Setting::Parse(a.GetOr("--codec", "zlib:1"));
  if (!codec.has_value()) {
    return UsageError(codec.error().message(), a.spec());
  }
  o.codec = *codec;
  auto mode = gen::ParseGenMode(a.GetOr("--mode", "object"));
  if (!mode.has_value()) {
    return UsageError(mode.error().message(), a.spec());
  }
  o.mode = *mode;
  auto format = rootwrite::ParseDatasetFormat(a.GetOr("--format", "ttree"));
  if (!format.has_value()) {
    return UsageError(format.error().message(), a.spec());
  }
  o.format = *format;
  if (o.events < o.files) {
    return UsageError("--events must be at least --files", a.spec());
  }

  Progress progress("gen", static_cast<uint64_t>(o.events), "events");
  const auto start = std::chrono::steady_clock::now();
  auto report = gen::GenerateNanoAod(o, [&](const gen::GenProgress& p) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (secs > 0) {
      char note[64];
      std::snprintf(note, sizeof note, "%.1f MB/s written",
                    static_cast<double>(p.file_bytes) / 1e6 / secs);
      progress.SetNote(note);
    }
    progress.Set(static_cast<uint64_t>(p.events));
  });
  progress.Finish();
  if (!report.has_value()) {
    return ReportError(report.error());
  }
  if (a.Has("--json")) {
    PrintJson(o, *report);
  } else {
    PrintText(o, *report);
  }
  return kExitOk;
}

constexpr OptionSpec kNanoAodOptions[] = {
    {"--template", "FILE", "NanoAOD template",
     "nanoAOD_2015_CMS_Open_Data_ttbar.root in $FERRY_ROOT_DATA_DIR, else the installed "
     "share/ferry, else the source tree's data/root"},
    {"--events", "N", "events in total, split evenly across the files"},
    {"--files", "K", "number of files", "1"},
    {"--codec", "C", "zlib:1, lzma:9, zstd:5, lz4, none; level after ':'", "zlib:1"},
    {"--out", "DIR", "output directory (created if needed)"},
    {"--seed", "S", "random seed", "1"},
    {"--mode", "M",
     "object: multiplicities from a template event, each object drawn from the template's pool "
     "of such objects, event-level branch groups from their own events, floats smoothed by a "
     "kernel fitted to each branch; event: whole template events, floats perturbed by up to 2% "
     "(the bytes of ferry's earlier datasets)",
     "object"},
    {"--format", "F",
     "ttree: an 'Events' TTree; rntuple: an 'Events' RNTuple (format 1.0) of the same events, "
     "laid out as ROOT's RNTupleImporter converts the tree (RVec fields with their "
     "cardinalities; pages of 64 KiB, clusters of 128 MiB compressed, as ROOT)",
     "ttree"},
    {"--basket-size", "B", "initial basket size in bytes (ttree)", "32000, as ROOT"},
    {"--auto-flush", "N",
     "entries per cluster, or -bytes: first cluster at that many compressed bytes (ttree)",
     "-30000000, as ROOT"},
    {"--cluster-bytes", "B", "compressed bytes per cluster (rntuple)", "134217728, as ROOT"},
    {"--json", "", "print a JSON report"},
};

constexpr CommandSpec kNanoAod{
    .path = "gen nanoaod",
    .summary =
        "write K ROOT files (DIR/nanoaod_0000.root ...) holding N events in total, each "
        "with an 'Events' tree (or RNTuple) of the template's schema, filled by resampling the "
        "template",
    .synopsis = "--events N --out DIR",
    .options = kNanoAodOptions,
    .notes =
        "run/luminosityBlock/event are renumbered: several runs, lumi blocks of 200-500 events,\n"
        "sparse increasing 64-bit event numbers. Deterministic for a seed.\n"
        "At the end it prints the share of the stored bytes that an AGC-like selection of\n"
        "branches (jets, electrons, muons, MET and their counters) touches.",
    .run = RunNanoAod,
};

constexpr const CommandSpec* kGenSubcommands[] = {&kNanoAod};

}  // namespace

constexpr CommandSpec kGenCommand{
    .path = "gen",
    .summary = "generate NanoAOD-like datasets",
    .subcommands = kGenSubcommands,
};

}  // namespace ferry::cli
