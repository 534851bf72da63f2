// gen_bench: `ferry gen nanoaod` write rate beside the bare codec's compression rate of the same
// bytes, and the size per event of generated NanoAOD per codec.
//
// For each codec: generate N events into one file (timed: resampling, serialisation,
// compression, writes), then read every basket back, decompress it, and time the bare codec
// compressing exactly those payloads again (same algorithm and level, blocks of at most 16 MiB).
// Overhead = generator time / bare time - 1 (target: under 30%), in wall time (the generator
// resamples the next batch on a second thread while it writes) and in CPU time of the process
// (all work counted; steadier on a shared machine). Also reported:
// the resampling time alone, bytes per event, and the template's own events compressed branch by
// branch with the same codec (a real-data reference for the bytes per event; real CMS NanoAOD
// reports about 1-2 kB/event with zlib, less with LZMA).
//
// usage: gen_bench [--template FILE] [--events N] [--codecs zlib:1,lzma:9,zstd:5,lz4]
//                  [--dir SCRATCH] [--json OUT] [--keep] [--inline] [--rounds R]
//                  [--round-seconds S] [--mode object|event]
// Each codec writes at most N events (default 300000), fewer when one round would take more
// than S seconds (default 20) at the rate a 5000-event probe measured: zlib, zstd and lz4 write
// files of several clusters (the steady state), LZMA-9 a smaller one.
// --rounds R (default 3) alternates the generator and the bare codec R times and keeps each
// side's best time.
// --mode: the generator's model (resampler.h), object by default.
// --inline resamples on the writing thread (one thread; by default a second thread resamples
// the next batch while the first writes).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/endian.h"
#include "base/json_writer.h"
#include "base/strings.h"
#include "codec/compression.h"
#include "gen/event_ids.h"
#include "gen/event_template.h"
#include "gen/nanoaod_gen.h"
#include "gen/resampler.h"
#include "rootio/basket.h"
#include "rootio/root_file.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace ferry;

constexpr int64_t kProbeEvents = 5000;

struct CodecResult {
  std::string codec;
  int64_t events = 0;
  uint64_t file_bytes = 0;
  uint64_t payload_bytes = 0;  // uncompressed basket payloads
  uint64_t baskets = 0;
  double write_s = 0;     // CPU seconds, template loading excluded
  double bare_s = 0;      // CPU seconds
  double resample_s = 0;  // CPU seconds
  double write_wall_s = 0;
  double bare_wall_s = 0;
  double template_bytes_per_event = 0;
};

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU seconds of this process (user + system): the machine may be shared, and both sides are
// single-threaded, so CPU time compares them fairly where wall time would not.
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The uncompressed payload of every basket of the file.
Result<std::vector<std::vector<uint8_t>>> BasketPayloads(const std::string& path) {
  auto f = FERRY_TRY(rootio::RootFile::OpenPath(path));
  auto t = FERRY_TRY(f->OpenTree("Events"));
  std::vector<std::vector<uint8_t>> out;
  for (size_t bi = 0; bi < t->info().branches.size(); ++bi) {
    for (size_t k = 0; k < t->info().branches[bi].baskets.size(); ++k) {
      auto record = FERRY_TRY(t->ReadBasketRecord(static_cast<int32_t>(bi), k));
      auto h = FERRY_TRY(rootio::ParseBasketHeader(record));
      ByteVector payload;
      FERRY_TRY(rootio::DecodePayload(std::span<const uint8_t>(record).subspan(h.key.keylen),
                                      h.key.objlen, &payload));
      out.emplace_back(payload.begin(), payload.end());
    }
  }
  return out;
}

// Bare codec over the same payloads, with the writer's settings (for LZMA its capped
// dictionary): the compression calls alone.
Result<double> BareCompress(const codec::Setting& s,
                            const std::vector<std::vector<uint8_t>>& payloads,
                            double* wall) {
  ByteVector out;
  auto t0 = Clock::now();
  double c0 = CpuSeconds();
  for (const auto& p : payloads) {
    for (size_t pos = 0; pos < p.size(); pos += codec::kMaxBlockSize) {
      out.clear();
      size_t n = std::min(codec::kMaxBlockSize, p.size() - pos);
      FERRY_TRY(codec::CompressBlock(s, std::span<const uint8_t>(p).subspan(pos, n), &out));
    }
  }
  *wall = Seconds(t0, Clock::now());
  return CpuSeconds() - c0;
}

// The template's events compressed branch by branch (big-endian values, as in baskets).
Result<double> TemplateBytesPerEvent(const gen::EventTemplate& t, const codec::Setting& s) {
  uint64_t total = 0;
  std::vector<uint8_t> be;
  ByteVector out;
  for (const gen::TemplateBranch& b : t.branches) {
    const rootio::Column& c = b.values;
    size_t vs = rootio::LeafTypeSize(c.type);
    if (vs == 0 || c.bytes.empty()) {
      continue;
    }
    be.resize(c.bytes.size());
    for (size_t k = 0; k < c.bytes.size(); k += vs) {
      for (size_t j = 0; j < vs; ++j) {
        be[k + j] = c.bytes[k + vs - 1 - j];
      }
    }
    out.clear();
    auto packed = codec::CompressPayload(s, be, &out);
    total += packed.has_value() && *packed ? out.size() : be.size();
  }
  return static_cast<double>(total) / static_cast<double>(t.entries);
}

Result<CodecResult> RunCodec(const std::string& tmpl_path,
                             const gen::EventTemplate& tmpl,
                             double load_cpu_s,
                             const std::string& dir,
                             const codec::Setting& s,
                             int64_t events,
                             double round_seconds,
                             bool pipeline,
                             int rounds,
                             gen::GenMode mode) {
  CodecResult r;
  r.codec = s.ToString();
  gen::GenOptions o;
  o.template_path = tmpl_path;
  o.out_dir = dir;
  o.files = 1;
  o.codec = s;
  o.prefix = "bench_" + std::to_string(static_cast<int>(s.algorithm));
  o.measure_agc = false;
  o.pipeline = pipeline;
  o.mode = mode;
  // A probe of kProbeEvents sizes the timed file: as many events as one round_seconds round
  // holds, at most `events`. A file of many clusters measures the steady state a dataset is
  // written in; a one-cluster file (30k events) also pays the per-file set-up and the final
  // flush of every branch's first basket.
  o.events = std::min<int64_t>(kProbeEvents, events);
  const auto probe = FERRY_TRY(gen::GenerateNanoAod(o));
  std::filesystem::remove(probe.files.front().path);
  const double fit = static_cast<double>(o.events) / std::max(probe.seconds, 1e-3) * round_seconds;
  events = std::max<int64_t>(std::min<int64_t>(events, static_cast<int64_t>(fit)),
                             std::min<int64_t>(events, kProbeEvents));
  r.events = events;
  o.events = events;
  // Rounds alternate the generator and the bare codec, and each side keeps its best time: the
  // host's speed drifts by tens of percent over seconds here, and alternating keeps the two
  // sides on the same footing.
  std::vector<std::vector<uint8_t>> payloads;
  std::string path;
  // A codec whose first round takes over a minute (LZMA-9) runs once: over that long the drift
  // averages out.
  for (int round = 0; round < rounds && (round == 0 || r.write_wall_s < 60.0); ++round) {
    double c0 = CpuSeconds();
    auto report = FERRY_TRY(gen::GenerateNanoAod(o));
    const double cpu = CpuSeconds() - c0 - load_cpu_s;
    r.write_s = round == 0 ? cpu : std::min(r.write_s, cpu);
    r.write_wall_s = round == 0 ? report.seconds : std::min(r.write_wall_s, report.seconds);
    r.file_bytes = report.file_bytes;
    path = report.files.front().path;
    if (round == 0) {
      payloads = FERRY_TRY(BasketPayloads(path));
      for (const auto& p : payloads) {
        r.payload_bytes += p.size();
      }
      r.baskets = payloads.size();
    }
    double wall = 0;
    const double bare = FERRY_TRY(BareCompress(s, payloads, &wall));
    r.bare_s = round == 0 ? bare : std::min(r.bare_s, bare);
    r.bare_wall_s = round == 0 ? wall : std::min(r.bare_wall_s, wall);
  }
  // Resampling alone: the generator's own work, without serialisation or compression.
  std::unique_ptr<gen::Resampler> resampler = gen::MakeResampler(mode, tmpl, o.seed);
  gen::EventIdSequence ids(o.seed);
  std::vector<rootio::Column> cols;
  double r0 = CpuSeconds();
  for (int64_t done = 0; done < events; done += o.batch_events) {
    resampler->NextBatch(std::min(o.batch_events, events - done), ids, &cols);
  }
  r.resample_s = CpuSeconds() - r0;
  r.template_bytes_per_event = FERRY_TRY(TemplateBytesPerEvent(tmpl, s));
  std::filesystem::remove(path);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("FERRY_ROOT_DATA_DIR");
  std::string tmpl_path =
      std::string(env != nullptr ? env : "data/root") + "/nanoAOD_2015_CMS_Open_Data_ttbar.root";
  int64_t events = 300000;
  double round_seconds = 20;
  std::string codecs = "zlib:1,lzma:9,zstd:5,lz4";
  std::string json_out;
  std::string dir;
  bool keep = false;
  bool pipeline = true;
  int rounds = 3;
  gen::GenMode mode = gen::GenMode::kObject;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      return i + 1 < argc ? argv[++i] : "";
    };
    if (a == "--template") {
      tmpl_path = next();
    } else if (a == "--events") {
      events = std::atoll(next().c_str());
    } else if (a == "--round-seconds") {
      round_seconds = std::atof(next().c_str());
    } else if (a == "--codecs") {
      codecs = next();
    } else if (a == "--json") {
      json_out = next();
    } else if (a == "--dir") {
      dir = next();
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--rounds") {
      rounds = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--inline") {
      pipeline = false;
    } else if (a == "--mode") {
      auto m = gen::ParseGenMode(next());
      if (!m.has_value()) {
        std::fprintf(stderr, "gen_bench: %s\n", m.error().ToString().c_str());
        return 2;
      }
      mode = *m;
    } else {
      std::fprintf(stderr,
                   "usage: gen_bench [--template FILE] [--events N] [--codecs LIST] [--dir D] "
                   "[--json OUT] [--keep] [--inline] [--rounds R] [--round-seconds S] "
                   "[--mode object|event]\n");
      return 2;
    }
  }
  if (events < 1 || !(round_seconds > 0)) {
    std::fprintf(stderr, "gen_bench: --events and --round-seconds must be positive\n");
    return 2;
  }
  if (dir.empty()) {
    dir =
        (std::filesystem::temp_directory_path() / ("ferry-gen-bench-" + std::to_string(::getpid())))
            .string();
  }
  double l0 = CpuSeconds();
  auto tmpl = gen::LoadTemplate(tmpl_path);
  const double load_cpu_s = CpuSeconds() - l0;
  if (!tmpl.has_value()) {
    std::fprintf(stderr, "gen_bench: %s\n", tmpl.error().ToString().c_str());
    return 1;
  }
  std::vector<CodecResult> results;
  std::printf("%-8s %9s %8s %9s %10s %10s %9s %9s %9s %11s\n", "codec", "events", "B/event",
              "tmpl B/ev", "gen MB/s", "bare MB/s", "overhead", "over.cpu", "resample", "file");
  for (std::string_view c : Split(codecs, ',')) {
    auto s = codec::Setting::Parse(c);
    if (!s.has_value()) {
      std::fprintf(stderr, "gen_bench: %s\n", s.error().ToString().c_str());
      return 2;
    }
    auto r = RunCodec(tmpl_path, *tmpl, load_cpu_s, dir, *s, events, round_seconds, pipeline,
                      rounds, mode);
    if (!r.has_value()) {
      std::fprintf(stderr, "gen_bench: %s\n", r.error().ToString().c_str());
      return 1;
    }
    const double mb = static_cast<double>(r->payload_bytes) / 1e6;
    std::printf("%-8s %9lld %8.0f %9.0f %10.1f %10.1f %8.1f%% %8.1f%% %8.1f%% %11s\n",
                r->codec.c_str(), static_cast<long long>(r->events),
                static_cast<double>(r->file_bytes) / static_cast<double>(r->events),
                r->template_bytes_per_event, mb / r->write_wall_s, mb / r->bare_wall_s,
                100.0 * (r->write_wall_s / r->bare_wall_s - 1.0),
                100.0 * (r->write_s / r->bare_s - 1.0), 100.0 * r->resample_s / r->write_s,
                HumanBytes(static_cast<double>(r->file_bytes)).c_str());
    std::fflush(stdout);
    results.push_back(*r);
  }
  if (!keep) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  if (!json_out.empty()) {
    JsonWriter w(2);
    w.BeginObject()
        .Field("template", tmpl_path)
        .Field("max_events", events)
        .Field("round_seconds", round_seconds)
        .Field("rounds", rounds)
        .Field("pipeline", pipeline)
        .Field("mode", gen::GenModeName(mode))
        .Key("codecs")
        .BeginArray();
    for (const CodecResult& r : results) {
      const double mb = static_cast<double>(r.payload_bytes) / 1e6;
      w.BeginObject().Field("codec", r.codec).Field("events", r.events);
      w.Field("file_bytes", r.file_bytes).Field("payload_bytes", r.payload_bytes);
      w.Field("baskets", r.baskets);
      w.Field("bytes_per_event", static_cast<double>(r.file_bytes) / static_cast<double>(r.events));
      w.Field("template_bytes_per_event", r.template_bytes_per_event);
      w.Field("write_cpu_seconds", r.write_s).Field("bare_cpu_seconds", r.bare_s);
      w.Field("resample_cpu_seconds", r.resample_s);
      w.Field("write_wall_seconds", r.write_wall_s).Field("bare_wall_seconds", r.bare_wall_s);
      w.Field("write_mb_per_s", mb / r.write_wall_s).Field("bare_mb_per_s", mb / r.bare_wall_s);
      w.Field("overhead", r.write_wall_s / r.bare_wall_s - 1.0);
      w.Field("write_cpu_mb_per_s", mb / r.write_s).Field("bare_cpu_mb_per_s", mb / r.bare_s);
      w.Field("overhead_cpu", r.write_s / r.bare_s - 1.0).EndObject();
    }
    w.EndArray().EndObject();
    FILE* f = std::fopen(json_out.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "gen_bench: cannot write %s\n", json_out.c_str());
      return 1;
    }
    std::fprintf(f, "%s\n", w.str().c_str());
    std::fclose(f);
  }
  return 0;
}
