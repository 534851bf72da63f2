// ferry analyze agc: the AGC ttbar analysis over local files or root:// URLs.
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/agc_pass.h"
#include "base/progress.h"
#include "base/strings.h"
#include "cli/agc_plot.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "xrd/open_source.h"

namespace ferry::cli {
namespace {

using analysis::AgcReport;
using analysis::Cutflow;
using analysis::Histogram;
using analysis::Variation;

void PrintTable(const AgcReport& r) {
  const analysis::PassStats& s = r.stats;
  std::printf("ferry analyze agc: %llu file%s, %s, %llu events, %u threads (+%u reads ahead)\n\n",
              static_cast<unsigned long long>(s.files), s.files == 1 ? "" : "s",
              HumanBytes(static_cast<double>(s.dataset_bytes)).c_str(),
              static_cast<unsigned long long>(s.events), r.threads, r.reads_in_flight);
  std::printf("%-26s", "cut flow");
  for (Variation v : analysis::kVariations) {
    std::printf(" %12.*s", static_cast<int>(analysis::VariationName(v).size()),
                analysis::VariationName(v).data());
  }
  std::printf("\n");
  struct Row {
    const char* name;
    uint64_t Cutflow::*field;
  };
  const Row rows[] = {
      {"events", &Cutflow::events},
      {"exactly 1 lepton", &Cutflow::one_lepton},
      {">= 4 jets", &Cutflow::four_jets},
      {">= 1 b-tag", &Cutflow::one_btag},
      {"4j1b (1 b-tag)", &Cutflow::region_4j1b},
      {"4j2b (>= 2 b-tags)", &Cutflow::region_4j2b},
  };
  for (const Row& row : rows) {
    std::printf("  %-24s", row.name);
    for (Variation v : analysis::kVariations) {
      std::printf(" %12llu", static_cast<unsigned long long>(r.result.cutflow(v).*row.field));
    }
    std::printf("\n");
  }
  std::printf("\n%-26s %10s %12s %10s  %s\n", "histogram", "entries", "mean", "integral", "digest");
  for (const Histogram& h : r.result.histograms()) {
    std::printf("  %-24s %10llu %12.4f %10.0f  %s\n", h.name().c_str(),
                static_cast<unsigned long long>(h.entries()), h.Mean(), h.Integral(),
                analysis::DigestHex(h.Digest()).c_str());
  }
  std::printf("\ndigest (histograms + cut flows): %s\n\n",
              analysis::DigestHex(r.result.Digest()).c_str());
  std::printf(
      "I/O   %s read = %.2f%% of the dataset; %llu requests (%llu vector reads, %llu "
      "chunks), %llu clusters\n",
      HumanBytes(static_cast<double>(s.bytes_read)).c_str(), 100.0 * s.fraction_read(),
      static_cast<unsigned long long>(s.requests), static_cast<unsigned long long>(s.vector_reads),
      static_cast<unsigned long long>(s.chunks), static_cast<unsigned long long>(s.units));
  std::printf(
      "time  wall %.3f s (open %.3f s); CPU %.3f s = decompression %.3f + analysis %.3f "
      "+ other %.3f; I/O wait %.3f s (summed over workers)\n",
      s.wall_s, s.open_s, s.cpu_s, s.decompress_cpu_s, s.analysis_cpu_s, s.other_cpu_s(),
      s.io_wait_s);
}

Result<unsigned> ParseCount(const Args& args,
                            std::string_view name,
                            unsigned fallback,
                            unsigned min) {
  auto v = args.Get(name);
  if (!v.has_value()) {
    return fallback;
  }
  auto n = ParseUint(*v);
  if (!n.has_value() || *n < min || *n > 4096) {
    return InvalidArgumentError(std::string(name) + " wants a number in [" + std::to_string(min)
                                + ", 4096], got '" + *v + "'");
  }
  return static_cast<unsigned>(*n);
}

int RunAgc(const Args& args) {
  if (args.positional().empty()) {
    return UsageError("expected at least one URL_OR_FILE", args.spec());
  }
  analysis::PassOptions options;
  auto threads = ParseCount(args, "--threads", 0, 1);
  auto reads = ParseCount(args, "--reads", 8, 0);
  auto opens = ParseCount(args, "--opens", 8, 1);
  if (!opens.has_value()) {
    return UsageError(opens.error().message(), args.spec());
  }
  if (!threads.has_value()) {
    return UsageError(threads.error().message(), args.spec());
  }
  if (!reads.has_value()) {
    return UsageError(reads.error().message(), args.spec());
  }
  options.threads = *threads;
  options.reads_in_flight = *reads;
  options.opens_in_flight = *opens;
  options.tree = args.GetOr("--tree", "Events");

  std::unique_ptr<Progress> progress;
  std::once_flag progress_once;
  options.progress = [&](uint64_t done, uint64_t total) {
    std::call_once(progress_once,
                   [&] { progress = std::make_unique<Progress>("agc", total, "events"); });
    progress->Set(done);
  };
  auto open = [](const std::string& path) {
    return xrd::OpenSource(path);
  };
  auto report = analysis::RunAgcPass(args.positional(), open, options);
  if (progress != nullptr) {
    progress->Finish();
  }
  if (!report.has_value()) {
    return ReportError(report.error());
  }
  if (auto plot = args.Get("--plot"); plot.has_value()) {
    Status st = PlotAgc(*report, *plot);
    if (!st.has_value()) {
      return ReportError(std::move(st).error().AddContext("plot " + *plot));
    }
  }
  if (args.Has("--json")) {
    std::printf("%s\n", analysis::AgcReportJson(*report, 0).c_str());
  } else {
    PrintTable(*report);
    if (auto plot = args.Get("--plot"); plot.has_value()) {
      std::printf("plot  %s\n", plot->c_str());
    }
  }
  return kExitOk;
}

constexpr OptionSpec kAgcOptions[] = {
    {"--threads", "N", "compute threads", "cores"},
    {"--reads", "N", "clusters fetched ahead of them", "8"},
    {"--opens", "N", "input files opened at once (1: one after the other, as a TChain)", "8"},
    {"--tree", "T", "the TTree or RNTuple to read", "Events"},
    {"--json", "", "print the report as one JSON document"},
    {"--plot", "out.png", "also draw the histograms into a PNG (needs gnuplot)"},
};

constexpr CommandSpec kAgc{
    .path = "analyze agc",
    .summary = "the AGC ttbar analysis: cut flow and histograms with their variations",
    .synopsis = "URL_OR_FILE...",
    .options = kAgcOptions,
    .notes =
        "URL_OR_FILE: a local path or root://host//path (read through XrdCl and its "
        "plug-ins,\nso an enabled ferry cache serves it). Each file's T may be a TTree or an "
        "RNTuple\n(NanoAOD's RVec fields, as ROOT's importer and ferry gen nanoaod "
        "write them).",
    .run = RunAgc,
};

constexpr const CommandSpec* kAnalyzeSubcommands[] = {&kAgc};

}  // namespace

constexpr CommandSpec kAnalyzeCommand{
    .path = "analyze",
    .summary = "run an analysis over files or root:// URLs",
    .subcommands = kAnalyzeSubcommands,
};

}  // namespace ferry::cli
