// rntuple_bench: the TTree and RNTuple forms of the same events (`ferry gen nanoaod
// --format ttree|rntuple`, same seed) side by side, per codec: file size, and the time to read
// and decode the AGC's columns — and then every column — with the readers `ferry analyze agc`
// and `ferry store convert` use (rootio::TreeClusterReader, rootio::RntupleClusterReader: one
// vector read per cluster, decoded into rootio::Columns). Both files are held in memory, so
// the comparison is the readers' work, not the disk's. For the RNTuple side, the bare
// decompression of the same pages too: the reader's overhead over it.
//
// usage: rntuple_bench [--json OUT] [--rounds N] LABEL TREE.root RNTUPLE.root [LABEL ...]
// Rounds alternate the sides; each side's best round counts (CPU time of this thread; the
// machine is shared). Prints ratios against the targets; a benchmark, not a test: it exits 0
// whatever the ratios are.
#include "rootio/rntuple.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "analysis/agc.h"
#include "base/json_writer.h"
#include "io/local_source.h"
#include "rootio/rntuple_blob.h"
#include "rootio/rntuple_cluster_reader.h"
#include "rootio/root_file.h"
#include "rootio/tree_cluster_reader.h"

namespace {

using ferry::ByteVector;
using ferry::Status;
namespace analysis = ferry::analysis;
namespace rootio = ferry::rootio;

double CpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// A file held in memory with its dataset opened.
struct Loaded {
  std::unique_ptr<ferry::io::MemorySource> source;
  std::unique_ptr<rootio::RootFile> file;
  std::unique_ptr<rootio::Tree> tree;
  std::unique_ptr<rootio::Rntuple> rntuple;
  uint64_t bytes = 0;
};

bool Fail(const ferry::Error& e) {
  std::fprintf(stderr, "rntuple_bench: %s\n", e.ToString().c_str());
  return false;
}

bool Load(const std::string& path, bool rntuple, Loaded* out) {
  auto disk = ferry::io::FileSource::Open(path);
  if (!disk.has_value()) {
    return Fail(disk.error());
  }
  std::vector<uint8_t> all((*disk)->size());
  if (auto s = (*disk)->ReadAt(0, all); !s.has_value()) {
    return Fail(s.error());
  }
  out->bytes = all.size();
  out->source = std::make_unique<ferry::io::MemorySource>(std::move(all), path);
  auto file = rootio::RootFile::Open(*out->source);
  if (!file.has_value()) {
    return Fail(file.error());
  }
  out->file = std::move(*file);
  if (rntuple) {
    auto r = rootio::Rntuple::Open(*out->file, "Events");
    return r.has_value() ? (out->rntuple = std::move(*r), true) : Fail(r.error());
  }
  auto t = out->file->OpenTree("Events");
  return t.has_value() ? (out->tree = std::move(*t), true) : Fail(t.error());
}

// Every readable single-leaf branch of numbers (counters join by themselves).
std::vector<std::string> AllLeaves(const rootio::Tree& tree) {
  std::vector<std::string> out;
  for (const rootio::Branch& b : tree.info().branches) {
    if (b.supported && b.leaves.size() == 1 && tree.CheckReadable(b.leaves[0]).has_value()
        && tree.info().leaves[static_cast<size_t>(b.leaves[0])].type != rootio::LeafType::kString) {
      out.push_back(b.name);
    }
  }
  return out;
}

// Every top-level field the bulk path reads (RVecs, scalars, arrays, cardinalities).
std::vector<std::string> AllFields(const rootio::Rntuple& r) {
  std::vector<std::string> out;
  for (uint32_t id : r.TopLevelFields()) {
    if (rootio::ResolveRntupleLeaf(r, r.fields()[id].name).has_value()) {
      out.push_back(r.fields()[id].name);
    }
  }
  return out;
}

struct Timing {
  double cpu_s = 1e300;     // best round: fetch (a copy out of memory) and decode
  double decode_s = 1e300;  // best round's decode alone
  uint64_t planned_bytes = 0;
  size_t columns = 0;
};

struct RoundTime {
  double cpu_s = 0;
  double decode_s = 0;
};

void KeepBest(const RoundTime& r, Timing* t) {
  t->cpu_s = std::min(t->cpu_s, r.cpu_s);
  t->decode_s = std::min(t->decode_s, r.decode_s);
}

// A reader's buffers, kept across rounds as a worker of the analysis keeps them across units
// (the steady state: no first touch of fresh memory).
template <class Scratch>
struct Buffers {
  ByteVector fetched;
  std::vector<rootio::Column> columns;
  Scratch scratch;
};

// One round: every unit fetched (a memory copy) and decoded; CPU seconds of this thread.
template <class Reader, class Scratch>
Status Round(const Reader& reader, Buffers<Scratch>* b, RoundTime* t) {
  const double c0 = CpuNow();
  for (size_t u = 0; u < reader.units().size(); ++u) {
    FERRY_TRY(reader.Fetch(u, &b->fetched));
    const double d0 = CpuNow();
    FERRY_TRY(reader.Decode(u, b->fetched, &b->scratch, &b->columns));
    t->decode_s += CpuNow() - d0;
  }
  t->cpu_s = CpuNow() - c0;
  return ferry::OkStatus();
}

// The RNTuple pages' bare decompression (what any reader must spend), best of `rounds`.
double BareDecompress(const rootio::RntupleClusterReader& reader, int rounds) {
  const rootio::Rntuple& r = reader.rntuple();
  double best = 1e300;
  ByteVector buffer;
  ByteVector out;
  for (int round = 0; round < rounds; ++round) {
    double total = 0;
    for (size_t u = 0; u < reader.units().size(); ++u) {
      const rootio::RntupleUnit& unit = reader.units()[u];
      if (!reader.Fetch(u, &buffer).has_value()) {
        return 0;
      }
      const double c0 = CpuNow();
      for (const rootio::RntuplePageRef& p : unit.fetch) {
        const rootio::PageInfo& info = r.clusters()[unit.cluster].columns[p.column].pages[p.page];
        auto stored = std::span<const uint8_t>(buffer).subspan(
            static_cast<size_t>(p.buffer_offset), static_cast<size_t>(info.locator.size));
        (void)rootio::Unzip(stored, rootio::PageLength(info.elements, r.columns()[p.column].bits),
                            "page", &out);
      }
      total += CpuNow() - c0;
    }
    best = std::min(best, total);
  }
  return best;
}

struct Pair {
  std::string label;
  Loaded tree, rntuple;
  int64_t events = 0;
  Timing tree_agc, rntuple_agc, tree_all, rntuple_all;
  double bare_agc_s = 0;
};

bool Measure(Pair* p, int rounds) {
  const std::vector<std::string> agc(analysis::AgcLeaves().begin(), analysis::AgcLeaves().end());
  auto ta = rootio::TreeClusterReader::Make(*p->tree.tree, agc);
  auto ra = rootio::RntupleClusterReader::Make(*p->rntuple.rntuple, agc);
  auto tl = rootio::TreeClusterReader::Make(*p->tree.tree, AllLeaves(*p->tree.tree));
  auto rl = rootio::RntupleClusterReader::Make(*p->rntuple.rntuple, AllFields(*p->rntuple.rntuple));
  if (!ta.has_value() || !ra.has_value() || !tl.has_value() || !rl.has_value()) {
    return Fail(!ta.has_value()   ? ta.error()
                : !ra.has_value() ? ra.error()
                : !tl.has_value() ? tl.error()
                                  : rl.error());
  }
  p->events = p->tree.tree->entries();
  p->tree_agc = {1e300, 1e300, ta->bytes(), ta->leaves().size()};
  p->rntuple_agc = {1e300, 1e300, ra->bytes(), ra->leaves().size()};
  p->tree_all = {1e300, 1e300, tl->bytes(), tl->leaves().size()};
  p->rntuple_all = {1e300, 1e300, rl->bytes(), rl->leaves().size()};
  Buffers<rootio::BasketDecoder> tb[2];
  Buffers<rootio::RntupleScratch> rb[2];
  // A first round warms the buffers; then rounds alternate the sides.
  for (int round = 0; round <= rounds; ++round) {
    RoundTime t[4];
    Status s = Round(*ta, &tb[0], &t[0]);
    s = s.has_value() ? Round(*ra, &rb[0], &t[1]) : s;
    s = s.has_value() ? Round(*tl, &tb[1], &t[2]) : s;
    s = s.has_value() ? Round(*rl, &rb[1], &t[3]) : s;
    if (!s.has_value()) {
      return Fail(s.error());
    }
    if (round == 0) {
      continue;
    }
    KeepBest(t[0], &p->tree_agc);
    KeepBest(t[1], &p->rntuple_agc);
    KeepBest(t[2], &p->tree_all);
    KeepBest(t[3], &p->rntuple_all);
  }
  p->bare_agc_s = BareDecompress(*ra, rounds);
  return true;
}

void WriteSide(ferry::JsonWriter& w, const char* key, const Timing& t, int64_t events) {
  w.Key(key)
      .BeginObject()
      .Field("columns", static_cast<uint64_t>(t.columns))
      .Field("stored_bytes", t.planned_bytes)
      .Field("cpu_s", t.cpu_s)
      .Field("decode_cpu_s", t.decode_s)
      .Field("events_per_s", static_cast<double>(events) / t.cpu_s)
      .EndObject();
}

void Report(const Pair& p, ferry::JsonWriter& w) {
  const double size_ratio =
      static_cast<double>(p.rntuple.bytes) / static_cast<double>(p.tree.bytes);
  const double agc_speedup = p.tree_agc.cpu_s / p.rntuple_agc.cpu_s;
  const double all_speedup = p.tree_all.cpu_s / p.rntuple_all.cpu_s;
  // Decode alone against decompression alone (the fetch is a copy both would make).
  const double overhead = p.bare_agc_s > 0 ? p.rntuple_agc.decode_s / p.bare_agc_s - 1 : 0;
  std::printf("%-8s %9lld %10.1f %10.1f %7.3fx %s %8.2fx %s %8.2fx %8.1f%% %s\n", p.label.c_str(),
              static_cast<long long>(p.events), static_cast<double>(p.tree.bytes) / 1e6,
              static_cast<double>(p.rntuple.bytes) / 1e6, size_ratio,
              size_ratio <= 0.9 ? "ok  " : "MISS", agc_speedup,
              agc_speedup >= 1.3 ? "ok  " : "MISS", all_speedup, 100 * overhead,
              overhead < 0.15 ? "ok" : "MISS");
  w.BeginObject()
      .Field("codec", p.label)
      .Field("events", p.events)
      .Field("ttree_bytes", p.tree.bytes)
      .Field("rntuple_bytes", p.rntuple.bytes)
      .Field("size_ratio", size_ratio)
      .Field("agc_speedup", agc_speedup)
      .Field("all_columns_speedup", all_speedup)
      .Field("rntuple_bare_decompress_s", p.bare_agc_s)
      .Field("rntuple_reader_overhead", overhead);
  WriteSide(w, "ttree_agc", p.tree_agc, p.events);
  WriteSide(w, "rntuple_agc", p.rntuple_agc, p.events);
  WriteSide(w, "ttree_all", p.tree_all, p.events);
  WriteSide(w, "rntuple_all", p.rntuple_all, p.events);
  w.EndObject();
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  int rounds = 3;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      args.push_back(a);
    }
  }
  if (args.empty() || args.size() % 3 != 0) {
    std::fprintf(stderr,
                 "usage: rntuple_bench [--json OUT] [--rounds N] LABEL TREE.root RNTUPLE.root "
                 "[LABEL TREE.root RNTUPLE.root ...]\n");
    return 2;
  }
  std::printf("%-8s %9s %10s %10s %13s %13s %9s %13s\n", "codec", "events", "TTree MB",
              "RNTuple MB", "size (<=0.9)", "AGC x (>=1.3)", "all x", "overhead (<15%)");
  ferry::JsonWriter w(2);
  w.BeginObject().Field("benchmark", "rntuple").Field("rounds", rounds).Key("codecs").BeginArray();
  bool ok = true;
  for (size_t i = 0; i < args.size(); i += 3) {
    auto p = std::make_unique<Pair>();
    p->label = args[i];
    if (!Load(args[i + 1], false, &p->tree) || !Load(args[i + 2], true, &p->rntuple)
        || !Measure(p.get(), rounds)) {
      ok = false;
      continue;
    }
    Report(*p, w);
  }
  w.EndArray().EndObject();
  if (!json_path.empty()) {
    std::ofstream(json_path) << w.str() << "\n";
  }
  return ok ? 0 : 1;
}
