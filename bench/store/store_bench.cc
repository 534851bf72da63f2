// store_bench: ferry's event store against ferry's own TTree reader doing what ROOT does, on
// one generated NanoAOD-like file (bench/store/run.sh drives it, adds jsroot and strace, and
// draws the plots).
//
//   store_bench make-input --template T.root --events N --out F.root
//       fallback generator when `ferry gen nanoaod` is not available: whole template events,
//       floats perturbed, run/lumi/event numbers shaped like CMS data (runs of 100-600 lumis,
//       200-500 events per lumi, sparse increasing event numbers).
//   store_bench run --root F.root --work DIR --json OUT [--picks 2000] [--baseline-picks 200]
//                   [--codecs zstd:2,zstd:3,lz4,zlib:1] [--block-size 32K]
//                   [--parts picks,full,two,jagged,copies] [--reuse 1]
//       (5) converts per codec, then with the first codec's store: (1) scattered picks,
//       (2) full scan, (3) two-column scan, each on the pread and the mmap path (4); (7) column
//       copies (Muon_pt built then scanned, the AGC's columns' copies and the store's size);
//       then prints issue 28's targets against what this run measured.
//   store_bench pick --root F.root --store DIR --mode basket|cluster|pread|mmap --picks N
//       one pick run alone, for `strace -c` (read system calls per event).
//   store_bench remote --root F.root --store-url root://H:P//DIR --root-url root://H:P//F.root
//                      --json OUT [--picks 2000] [--baseline-picks 2]
//       (6) the same scattered picks from a remote store and with ferry's TTree reader (basket
//       traversal) over root://, with XRootD requests counted (bench/store/run.sh puts the
//       origin behind the 40 ms WAN emulation).
#include "store/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/fd.h"
#include "base/json_writer.h"
#include "base/mapped_file.h"
#include "base/strings.h"
#include "rootio/root_file.h"
#include "rootio/tree_cluster_reader.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/tree_writer.h"
#include "store/converter.h"
#include "store/selection.h"
#include "xrd/open_source.h"

namespace {

using namespace ferry;  // NOLINT: benchmark driver
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the process (the machine may be shared: wall time alone would measure the load).
double CpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

[[noreturn]] void Die(const Error& e) {
  std::fprintf(stderr, "store_bench: %s\n", e.ToString().c_str());
  std::exit(1);
}
template <class T>
T Must(Result<T> r) {
  if (!r.has_value())
    Die(r.error());
  return std::move(*r);
}
void Must(Status s) {
  if (!s.has_value())
    Die(s.error());
}

std::string Opt(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (name == argv[i])
      return argv[i + 1];
  }
  return def;
}

// The 1-minute load average (the machine is shared: every timing is recorded with it).
double LoadAverage() {
  double l = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) {
      l = 0;
    }
    std::fclose(f);
  }
  return l;
}

uint64_t AllocatedBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}
uint64_t ApparentBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}
uint64_t DirBytes(const std::string& dir, bool allocated) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    n += allocated ? AllocatedBytes(e.path().string()) : ApparentBytes(e.path().string());
  }
  return n;
}

// Where a conversion with `codec` goes: one folder per codec and level (zstd:2 and zstd:3 of
// one run must not share one, or the later one replaces the store the parts measure).
std::string StoreDir(const std::string& work, std::string codec, bool scan_copy) {
  std::replace(codec.begin(), codec.end(), ':', '-');
  return work + "/store-" + codec + (scan_copy ? "-scancopy" : "");
}

// The store's largest shard file (the one most picks land in).
std::string LargestShard(const std::string& dir) {
  std::string best;
  uint64_t best_bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string p = e.path().string();
    const uint64_t bytes = p.ends_with(".shard") ? ApparentBytes(p) : 0;
    if (bytes > best_bytes) {
      best = p;
      best_bytes = bytes;
    }
  }
  return best;
}

// ---- fallback input generator ----

int MakeInput(int argc, char** argv) {
  const std::string tmpl = Opt(argc, argv, "--template", "");
  const std::string out = Opt(argc, argv, "--out", "");
  const int64_t events = Must(ParseInt(Opt(argc, argv, "--events", "2000000")));
  auto in = Must(rootio::RootFile::OpenPath(tmpl));
  auto tree = Must(in->OpenTree("Events"));
  const rootio::TreeInfo& info = tree->info();
  auto file =
      Must(rootwrite::FileWriter::Create(out, {.compression = {codec::Algorithm::kZlib, 1}}));
  rootwrite::TreeWriter tw(*file, {.name = "Events"});
  std::vector<int32_t> leaves;
  std::vector<rootio::Column> tcols;
  std::map<std::string, int32_t> seen;
  for (int pass = 0; pass < 2; ++pass) {
    for (const rootio::Branch& b : info.branches) {
      if (!b.supported || b.leaves.size() != 1)
        continue;
      const rootio::Leaf& l = info.leaves[static_cast<size_t>(b.leaves[0])];
      if (l.type == rootio::LeafType::kString || l.type == rootio::LeafType::kUnknown)
        continue;
      if (l.jagged() != (pass == 1))
        continue;
      rootwrite::BranchSpec spec{.name = b.name, .type = l.type, .len = std::max(1, l.len)};
      if (l.jagged()) {
        spec.count = info.leaves[static_cast<size_t>(l.count_leaf)].name;
        if (!seen.count(spec.count))
          continue;
      }
      Must(tw.AddBranch(spec));
      seen[b.name] = static_cast<int32_t>(leaves.size());
      leaves.push_back(b.leaves[0]);
      tcols.push_back(Must(tree->ReadLeaf(b.leaves[0], tree->All())));
    }
  }
  const int64_t nt = tree->entries();
  const int32_t i_run = seen.at("run");
  const int32_t i_lumi = seen.at("luminosityBlock");
  const int32_t i_event = seen.at("event");
  std::mt19937_64 rng(7);
  uint32_t run = 273000;
  uint32_t lumi = 0;
  uint64_t event = 0;
  int64_t lumis_left = 0;
  int64_t events_left = 0;
  const int64_t batch = 1000;
  std::vector<rootio::Column> cols(leaves.size());
  std::vector<const rootio::Column*> ptrs(leaves.size());
  auto t0 = Clock::now();
  for (int64_t done = 0; done < events; done += batch) {
    const int64_t n = std::min(batch, events - done);
    for (size_t c = 0; c < cols.size(); ++c) {
      cols[c] = rootio::Column{};
      cols[c].type = tcols[c].type;
      cols[c].jagged = tcols[c].jagged;
      cols[c].fixed_len = tcols[c].fixed_len;
      if (cols[c].jagged)
        cols[c].offsets.push_back(0);
      ptrs[c] = &cols[c];
    }
    for (int64_t i = 0; i < n; ++i) {
      if (events_left == 0) {
        if (lumis_left == 0) {
          run += 1 + static_cast<uint32_t>(rng() % 40);
          lumi = 0;
          lumis_left = 100 + static_cast<int64_t>(rng() % 501);
          event = 1000000 + rng() % 6000000000ull;
        }
        ++lumi;
        --lumis_left;
        events_left = 200 + static_cast<int64_t>(rng() % 301);
      }
      --events_left;
      event += 1 + rng() % 64;
      const int64_t src = static_cast<int64_t>(rng() % static_cast<uint64_t>(nt));
      for (size_t c = 0; c < cols.size(); ++c) {
        const rootio::Column& t = tcols[c];
        rootio::Column& o = cols[c];
        auto [b, e] = t.EntryValues(src);
        const size_t sz = t.value_size();
        size_t at = o.bytes.size();
        o.bytes.insert(o.bytes.end(), t.bytes.begin() + static_cast<ptrdiff_t>(b * sz),
                       t.bytes.begin() + static_cast<ptrdiff_t>(e * sz));
        if (static_cast<int32_t>(c) == i_run)
          std::memcpy(o.bytes.data() + at, &run, 4);
        if (static_cast<int32_t>(c) == i_lumi)
          std::memcpy(o.bytes.data() + at, &lumi, 4);
        if (static_cast<int32_t>(c) == i_event)
          std::memcpy(o.bytes.data() + at, &event, 8);
        if (t.type == rootio::LeafType::kFloat32) {
          for (size_t k = at; k < o.bytes.size(); k += 4) {
            float f;
            std::memcpy(&f, o.bytes.data() + k, 4);
            // keep NanoAOD's reduced mantissa: perturb, then drop the low 12 bits
            f *= 1.0f + static_cast<float>(static_cast<int64_t>(rng() % 2001) - 1000) * 1e-5f;
            uint32_t u;
            std::memcpy(&u, &f, 4);
            u &= ~0xFFFu;
            std::memcpy(o.bytes.data() + k, &u, 4);
          }
        }
        if (o.jagged)
          o.offsets.push_back(o.bytes.size() / sz);
        ++o.num_entries;
      }
    }
    Must(tw.WriteColumns(ptrs));
    if ((done / batch) % 100 == 0) {
      std::fprintf(stderr, "\rmake-input: %lld/%lld events, %.0f s",
                   static_cast<long long>(done + n), static_cast<long long>(events), Since(t0));
    }
  }
  Must(tw.Close());
  Must(file->Close());
  std::fprintf(stderr, "\nmake-input: wrote %s (%s) in %.1f s\n", out.c_str(),
               HumanBytes(static_cast<double>(ApparentBytes(out))).c_str(), Since(t0));
  return 0;
}

// ---- the baselines: ferry's TTree reader doing what ROOT does ----

struct Picks {
  std::vector<int64_t> entries;
  std::vector<store::EventId> ids;
};

Picks MakePicks(const rootio::Tree& tree, size_t n) {
  Picks p;
  std::mt19937_64 rng(2000);
  std::vector<int64_t> all(static_cast<size_t>(tree.entries()));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  p.entries.assign(all.begin(), all.begin() + static_cast<ptrdiff_t>(std::min(n, all.size())));
  auto run = Must(tree.ReadLeaf("run", tree.All()));
  auto lumi = Must(tree.ReadLeaf("luminosityBlock", tree.All()));
  auto event = Must(tree.ReadLeaf("event", tree.All()));
  for (int64_t e : p.entries) {
    auto k = static_cast<size_t>(e);
    p.ids.push_back({run.AsUint64(k), lumi.AsUint64(k), event.AsUint64(k)});
  }
  return p;
}

// Leaves the store keeps (single-leaf numeric branches), in tree order.
std::vector<int32_t> StoredLeaves(const rootio::TreeInfo& info) {
  std::vector<int32_t> out;
  for (const rootio::Branch& b : info.branches) {
    if (!b.supported || b.leaves.size() != 1)
      continue;
    const rootio::Leaf& l = info.leaves[static_cast<size_t>(b.leaves[0])];
    if (l.type != rootio::LeafType::kString && l.type != rootio::LeafType::kUnknown)
      out.push_back(b.leaves[0]);
  }
  return out;
}

struct PickResult {
  size_t events = 0;
  double seconds = 0;
  double cpu = 0;
  uint64_t reads = 0;
  uint64_t requests = 0;  // read requests (a vector read of many ranges is one)
  uint64_t bytes = 0;
  uint64_t values = 0;  // values delivered (sanity: equal across readers)
};

// ROOT's GetEntry loop: per event, every branch's basket holding the entry (kept while the
// next entry stays inside it), one read + decode per basket change.
PickResult PickBaskets(const rootio::Tree& tree, const std::vector<int64_t>& entries) {
  const rootio::TreeInfo& info = tree.info();
  std::vector<int32_t> leaves = StoredLeaves(info);
  struct State {
    int64_t basket = -1;
    rootio::BasketDecoder decoder;
    rootio::BasketView view;
  };
  std::vector<State> st(leaves.size());
  tree.source().ResetStats();
  PickResult r;
  auto t0 = Clock::now();
  const double c0 = CpuNow();
  for (int64_t e : entries) {
    for (size_t k = 0; k < leaves.size(); ++k) {
      const rootio::Leaf& l = info.leaves[static_cast<size_t>(leaves[k])];
      const rootio::Branch& b = info.branches[static_cast<size_t>(l.branch)];
      auto it = std::upper_bound(
          b.baskets.begin(), b.baskets.end(), e,
          [](int64_t x, const rootio::BasketRef& ref) { return x < ref.first_entry; });
      const auto bi = static_cast<int64_t>(it - b.baskets.begin()) - 1;
      if (st[k].basket != bi) {
        st[k].view = Must(tree.ReadBasket(l.branch, static_cast<size_t>(bi), &st[k].decoder));
        st[k].basket = bi;
      }
      rootio::Column col = tree.StartColumn(leaves[k], e);
      Must(tree.AppendFromBasket(leaves[k], st[k].view, b.baskets[static_cast<size_t>(bi)],
                                 {e, e + 1}, nullptr, &col));
      r.values += col.num_values();
    }
    ++r.events;
  }
  r.seconds = Since(t0);
  r.cpu = CpuNow() - c0;
  r.reads = tree.source().stats().requests();
  r.requests = r.reads;
  r.bytes = tree.source().stats().bytes;
  return r;
}

// TTreeCache-like: per event, the cluster holding it is fetched with one vector read of every
// branch's baskets and decoded.
PickResult PickClusters(const rootio::Tree& tree, const std::vector<int64_t>& entries) {
  std::vector<std::string> names;
  for (int32_t li : StoredLeaves(tree.info()))
    names.push_back(tree.info().leaves[static_cast<size_t>(li)].name);
  auto reader = Must(rootio::TreeClusterReader::Make(tree, names));
  tree.source().ResetStats();
  ByteVector buffer;
  rootio::BasketDecoder decoder;
  std::vector<rootio::Column> cols;
  PickResult r;
  size_t current = SIZE_MAX;
  auto t0 = Clock::now();
  const double c0 = CpuNow();
  for (int64_t e : entries) {
    const auto& units = reader.units();
    auto it =
        std::upper_bound(units.begin(), units.end(), e,
                         [](int64_t x, const rootio::ReadUnit& u) { return x < u.entries.begin; });
    size_t u = static_cast<size_t>(it - units.begin()) - 1;
    if (u != current) {
      Must(reader.Fetch(u, &buffer));
      Must(reader.Decode(u, buffer, &decoder, &cols));
      current = u;
    }
    const int64_t i = e - units[u].entries.begin;
    for (size_t k = 0; k < names.size(); ++k) {
      auto [b, en] = cols[k].EntryValues(i);
      r.values += en - b;
    }
    ++r.events;
  }
  r.seconds = Since(t0);
  r.cpu = CpuNow() - c0;
  r.reads = tree.source().stats().requests();
  r.requests = r.reads;
  r.bytes = tree.source().stats().bytes;
  return r;
}

PickResult PickStore(const std::string& dir,
                     store::IoMode mode,
                     const std::vector<store::EventId>& ids) {
  store::StoreOptions so{.mode = mode};
  if (xrd::IsXrootdUrl(dir)) {
    so.open = [](const std::string& path, store::IoMode) {
      return xrd::OpenSource(path);
    };
  }
  auto s = Must(store::Store::Open(dir, so));
  auto cols = Must(s->ResolveColumns({}));
  s->ResetStats();
  PickResult r;
  std::vector<rootio::Column> out;
  auto t0 = Clock::now();
  const double c0 = CpuNow();
  Must(s->ReadEvents(ids, cols, &out));
  r.seconds = Since(t0);
  r.cpu = CpuNow() - c0;
  r.events = ids.size();
  for (const auto& c : out)
    r.values += c.num_values();
  r.reads = s->stats().reads;
  r.requests = s->stats().requests;
  r.bytes = s->stats().bytes;
  return r;
}

// What the machine charges for the two ways a pick reaches a cached page: the first touch of
// a page through a fresh mapping (a minor fault: the mmap path pays it for every page of a
// block it has not mapped yet), and a 4 KiB pread of it. Virtual machines that shadow the
// guest's page tables make the first several times dearer than on bare metal.
struct PageCosts {
  double fault_us = NAN;
  double pread_us = NAN;
};

PageCosts MeasurePageCosts(const std::string& path) {
  PageCosts c;
  if (path.empty()) {
    return c;
  }
  Fd fd = Must(Fd::Open(path, O_RDONLY));
  const auto size = static_cast<size_t>(Must(FileSize(fd.get())));
  const size_t pages = size / 4096;
  if (pages < 64) {
    return c;
  }
  std::mt19937_64 rng(7);
  std::vector<size_t> at(std::min<size_t>(pages, 20000));
  for (size_t& a : at) {
    a = (rng() % pages) * 4096;
  }
  std::vector<uint8_t> page(4096);
  auto pread_all = [&] {
    for (size_t a : at) {
      (void)::pread(fd.get(), page.data(), page.size(), static_cast<off_t>(a));
    }
  };
  pread_all();  // every page cached, as for the picks
  auto t0 = Clock::now();
  pread_all();
  c.pread_us = 1e6 * Since(t0) / static_cast<double>(at.size());
  MappedFile map = Must(MappedFile::MapFd(fd.get(), size));
  const uint8_t* base = map.data().data();
  uint64_t sum = 0;
  t0 = Clock::now();
  for (size_t a : at) {
    sum += *static_cast<const volatile uint8_t*>(base + a);
  }
  c.fault_us = 1e6 * Since(t0) / static_cast<double>(at.size());
  page[0] = static_cast<uint8_t>(sum);  // keeps the loads
  return c;
}

void WritePick(JsonWriter& w, const char* name, const PickResult& r) {
  w.Key(name).BeginObject();
  w.Field("events", static_cast<uint64_t>(r.events))
      .Field("seconds", r.seconds)
      .Field("cpu_seconds", r.cpu);
  w.Field("cpu_ms_per_event", 1e3 * r.cpu / static_cast<double>(std::max<size_t>(1, r.events)));
  w.Field("ms_per_event", 1e3 * r.seconds / static_cast<double>(std::max<size_t>(1, r.events)));
  w.Field("reads_per_event",
          static_cast<double>(r.reads) / static_cast<double>(std::max<size_t>(1, r.events)));
  w.Field("bytes_per_event",
          static_cast<double>(r.bytes) / static_cast<double>(std::max<size_t>(1, r.events)));
  w.Field("requests", r.requests);
  w.Field("values", r.values).EndObject();
  std::fprintf(
      stderr,
      "  %-22s %6zu events %9.3f ms/event (cpu %9.3f) %8.1f reads/event %10.0f bytes/event\n", name,
      r.events, 1e3 * r.seconds / static_cast<double>(std::max<size_t>(1, r.events)),
      1e3 * r.cpu / static_cast<double>(std::max<size_t>(1, r.events)),
      static_cast<double>(r.reads) / static_cast<double>(std::max<size_t>(1, r.events)),
      static_cast<double>(r.bytes) / static_cast<double>(std::max<size_t>(1, r.events)));
}

// ---- scans ----

struct ScanResult {
  double seconds = 0;
  double cpu = 0;
  uint64_t reads = 0;
  uint64_t bytes = 0;
  uint64_t selected = 0;
  double mean = 0;
  uint64_t values = 0;
};

// Column reader: ClusterReader over the given leaves, one vector read per cluster. With a
// selection (MET_pt > 25 && nMuon >= 1 on columns 0, 1) it counts and averages MET_pt.
ScanResult ScanColumns(const rootio::Tree& tree,
                       const std::vector<std::string>& names,
                       bool select) {
  auto reader = Must(rootio::TreeClusterReader::Make(tree, names));
  tree.source().ResetStats();
  ByteVector buffer;
  rootio::BasketDecoder decoder;
  std::vector<rootio::Column> cols;
  ScanResult r;
  double sum = 0;
  auto t0 = Clock::now();
  const double c0 = CpuNow();
  for (size_t u = 0; u < reader.units().size(); ++u) {
    Must(reader.Fetch(u, &buffer));
    Must(reader.Decode(u, buffer, &decoder, &cols));
    for (const auto& c : cols)
      r.values += c.num_values();
    if (select) {
      const rootio::Column& met = cols[static_cast<size_t>(reader.ColumnOf("MET_pt"))];
      const rootio::Column& nmu = cols[static_cast<size_t>(reader.ColumnOf("nMuon"))];
      const float* mv = reinterpret_cast<const float*>(met.bytes.data());
      const uint32_t* nv = reinterpret_cast<const uint32_t*>(nmu.bytes.data());
      for (int64_t i = 0; i < met.num_entries; ++i) {
        const double m = static_cast<double>(mv[i]);
        if (m > 25 && nv[i] >= 1) {
          ++r.selected;
          sum += m;
        }
      }
    }
  }
  r.seconds = Since(t0);
  r.cpu = CpuNow() - c0;
  r.mean = r.selected ? sum / static_cast<double>(r.selected) : 0;
  r.reads = tree.source().stats().requests();
  r.bytes = tree.source().stats().bytes;
  return r;
}

ScanResult ScanStore(const std::string& dir,
                     store::IoMode mode,
                     const std::vector<std::string>& names,
                     bool select,
                     const store::ScanOptions& options = {}) {
  auto s = Must(store::Store::Open(dir, {.mode = mode}));
  auto cols = Must(s->ResolveColumns(names));
  store::Selection sel =
      Must(store::Selection::Parse(select ? "MET_pt > 25 && nMuon >= 1" : "", s->schema()));
  s->ResetStats();
  ScanResult r;
  double sum = 0;
  std::vector<uint8_t> mask;
  auto t0 = Clock::now();
  const double c0 = CpuNow();
  Must(s->Scan(
      cols,
      [&](const store::ScanBatch& b) {
        for (const auto& c : b.columns)
          r.values += c.num_values();
        if (select) {
          std::vector<const rootio::Column*> v = {&b.columns[0], &b.columns[1]};
          sel.EvaluateBatch(v, b.events, &mask);
          const float* met = reinterpret_cast<const float*>(b.columns[0].bytes.data());
          for (int64_t i = 0; i < b.events; ++i) {
            if (mask[static_cast<size_t>(i)] != 0) {
              ++r.selected;
              sum += static_cast<double>(met[i]);
            }
          }
        }
        return OkStatus();
      },
      options, nullptr));
  r.seconds = Since(t0);
  r.cpu = CpuNow() - c0;
  r.mean = r.selected ? sum / static_cast<double>(r.selected) : 0;
  r.reads = s->stats().reads;
  r.bytes = s->stats().bytes;
  return r;
}

void WriteScan(JsonWriter& w, const char* name, const ScanResult& r) {
  w.Key(name).BeginObject().Field("seconds", r.seconds).Field("cpu_seconds", r.cpu);
  w.Field("reads", r.reads).Field("bytes", r.bytes);
  w.Field("values", r.values).Field("selected", r.selected).Field("mean", r.mean).EndObject();
  std::fprintf(stderr, "  %-22s %9.3f s (cpu %8.3f) %10llu reads %12s  selected %llu mean %.6f\n",
               name, r.seconds, r.cpu, static_cast<unsigned long long>(r.reads),
               HumanBytes(static_cast<double>(r.bytes)).c_str(),
               static_cast<unsigned long long>(r.selected), r.mean);
}

// Issue 28's targets, filled by the parts that measure them (NaN: not measured in this run).
struct Targets {
  double convert_rate = NAN;      // conversion rate / reader decode rate (first codec)
  double convert_rate_cpu = NAN;  // the same from CPU times, conversion spread over 2 threads
  double convert_size = NAN;      // its store / ROOT file
  double jagged_no_copy_s = NAN;  // Muon_pt from the E blocks (pread), wall s
  double full_scan_s = NAN;       // every column (pread), wall s
  double copy_over_reader = NAN;  // Muon_pt from its copy / column reader, CPU
  double agc_copies_size = NAN;   // store + AGC copies / ROOT file
  double pick_pread = NAN;        // CPU speedup per pick vs basket traversal
  double pick_mmap = NAN;
  double fault_us = NAN;  // first touch of a cached page through a mapping
  double pread_us = NAN;  // a 4 KiB pread of a cached page
};

void PrintTarget(JsonWriter& w, const char* key, const char* what, double v, bool met) {
  w.Key(key).BeginObject().Field("value", v).Field("met", !std::isnan(v) && met).EndObject();
  if (std::isnan(v)) {
    std::fprintf(stderr, "  %-68s not measured\n", what);
    return;
  }
  std::fprintf(stderr, "  %-68s %8.3f  %s\n", what, v, met ? "met" : "NOT met");
}

void WriteTargets(JsonWriter& w, const Targets& t) {
  std::fprintf(stderr, "issue 28 targets\n");
  w.Key("targets").BeginObject();
  PrintTarget(w, "convert_rate", "conversion rate / reader decode rate, at least 0.3",
              t.convert_rate, t.convert_rate >= 0.3 && t.convert_size <= 1.0);
  PrintTarget(w, "convert_size", "  at store size / ROOT file, at most 1.0", t.convert_size,
              t.convert_size <= 1.0);
  PrintTarget(w, "convert_rate_cpu", "  (from CPU times: two cores to itself, at least 0.3)",
              t.convert_rate_cpu, t.convert_rate_cpu >= 0.3);
  const double jag = t.jagged_no_copy_s / t.full_scan_s;
  PrintTarget(w, "muon_pt_without_copy_over_full_scan",
              "Muon_pt scan without a copy / full scan of every column, at most 1.0", jag,
              jag <= 1.0);
  PrintTarget(w, "muon_pt_copy_over_column_reader",
              "Muon_pt scan with a copy / column reader (CPU), at most 1.0", t.copy_over_reader,
              t.copy_over_reader <= 1.0);
  PrintTarget(w, "agc_copies_size", "store with AGC copies / ROOT file, at most 1.10",
              t.agc_copies_size, t.agc_copies_size <= 1.10);
  PrintTarget(w, "pick_pread", "pick vs basket traversal, pread (CPU), at least 1000x",
              t.pick_pread, t.pick_pread >= 1000);
  PrintTarget(w, "pick_mmap", "pick vs basket traversal, mmap (CPU), at least 1500x", t.pick_mmap,
              t.pick_mmap >= 1500);
  if (!std::isnan(t.fault_us)) {
    std::fprintf(stderr,
                 "    (here a mapped page's first touch costs %.2f us, a 4 KiB pread %.2f us)\n",
                 t.fault_us, t.pread_us);
  }
  w.EndObject();
}

// The AGC's collection columns (Jet, Muon, Electron: pt, eta, phi, mass, b-tag).
const std::vector<std::string> kAgcColumns = {
    "Jet_pt",       "Jet_eta",      "Jet_phi",      "Jet_mass",  "Jet_btagCSVV2",
    "Muon_pt",      "Muon_eta",     "Muon_phi",     "Muon_mass", "Electron_pt",
    "Electron_eta", "Electron_phi", "Electron_mass"};

// (7) column copies (issue 28), on a copy of the main store so the other parts are unchanged:
// Muon_pt from the E blocks while its copy is built, then from the copy; then the AGC's columns'
// copies, and the store's size with them.
void RunCopies(const std::string& main_store,
               const std::string& work,
               const rootio::Tree& tree,
               uint64_t root_bytes,
               JsonWriter& w,
               Targets* t) {
  std::fprintf(stderr, "(7) column copies\n");
  const std::string dir = work + "/store-copies";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(main_store, dir);
  // Unbounded here: the bench measures what the copies cost; the default budget is 15%.
  std::ofstream(dir + "/" + store::kStoreConfName) << "column_copies_budget = 100%\n";
  const std::vector<std::string> jag = {"Muon_pt"};
  w.Key("copies").BeginObject();
  WriteScan(w, "muon_pt_building_copy",
            ScanStore(dir, store::IoMode::kPread, jag, false, {.build_copies = true}));
  const ScanResult cp = ScanStore(dir, store::IoMode::kPread, jag, false);
  const ScanResult cm = ScanStore(dir, store::IoMode::kMmap, jag, false);
  const ScanResult cr = ScanColumns(tree, jag, false);
  WriteScan(w, "muon_pt_copy_pread", cp);
  WriteScan(w, "muon_pt_copy_mmap", cm);
  WriteScan(w, "tree_column_reader", cr);
  t->copy_over_reader = std::min(cp.cpu, cm.cpu) / cr.cpu;
  const double c0 = CpuNow();
  WriteScan(w, "agc_building_copies",
            ScanStore(dir, store::IoMode::kPread, kAgcColumns, false, {.build_copies = true}));
  auto s = Must(store::Store::Open(dir));
  uint64_t copy_bytes = 0;
  for (const store::CopyEntry& c : s->manifest().copies) {
    copy_bytes += c.bytes;
  }
  const uint64_t total = DirBytes(dir, true);
  t->agc_copies_size = static_cast<double>(total) / static_cast<double>(root_bytes);
  w.Field("agc_copy_bytes", copy_bytes).Field("store_with_agc_copies_bytes", total);
  w.Field("agc_copies_build_cpu_seconds", CpuNow() - c0);
  w.Field("agc_copies_over_shards",
          static_cast<double>(copy_bytes) / static_cast<double>(total - copy_bytes));
  w.EndObject();
  std::fprintf(stderr, "  AGC copies %s, store with them %s (%.3fx ROOT; copies %.1f%% of it)\n",
               HumanBytes(static_cast<double>(copy_bytes)).c_str(),
               HumanBytes(static_cast<double>(total)).c_str(), t->agc_copies_size,
               100.0 * static_cast<double>(copy_bytes) / static_cast<double>(total));
}

int Run(int argc, char** argv) {
  const std::string root = Opt(argc, argv, "--root", "");
  const std::string work = Opt(argc, argv, "--work", "out/bench/store-work");
  const std::string json_path = Opt(argc, argv, "--json", "out/bench/store.json");
  const size_t npicks = static_cast<size_t>(Must(ParseInt(Opt(argc, argv, "--picks", "2000"))));
  const size_t nbase =
      static_cast<size_t>(Must(ParseInt(Opt(argc, argv, "--baseline-picks", "200"))));
  const auto block = static_cast<uint32_t>(Must(ParseSize(Opt(argc, argv, "--block-size", "64K"))));
  // Named: Split's views must not outlive the string (a temporary in the range-for's
  // initializer is destroyed before the loop runs, before C++23).
  const std::string codec_list = Opt(argc, argv, "--codecs", "zstd:2,zstd:3,lz4,zlib:1");
  Targets targets;
  std::vector<std::string> codecs;
  for (auto c : Split(codec_list, ',')) {
    codecs.emplace_back(c);
  }
  std::filesystem::create_directories(work);

  auto file = Must(rootio::RootFile::OpenPath(root));
  auto tree = Must(file->OpenTree("Events"));
  const uint64_t root_bytes = file->source().size();
  JsonWriter w(1);
  w.BeginObject()
      .Field("root_file", root)
      .Field("root_bytes", root_bytes)
      .Field("events", tree->entries());
  w.Field("branches", static_cast<uint64_t>(StoredLeaves(tree->info()).size()));
  w.Field("clusters", static_cast<uint64_t>(tree->info().Clusters().size()));
  w.Field("page_cache", "warm (files written just before; every reader sees the same cache state)");
  std::fprintf(stderr, "%s: %lld events, %s\n", root.c_str(),
               static_cast<long long>(tree->entries()),
               HumanBytes(static_cast<double>(root_bytes)).c_str());

  // (5) conversion per codec (or, with --reuse 1, the stores and figures of an earlier run).
  const bool reuse = Opt(argc, argv, "--reuse", "0") == "1";
  // --parts picks,full,two,jagged,copies (default all): which measurements to run.
  const std::string parts = Opt(argc, argv, "--parts", "picks,full,two,jagged,copies");
  auto part = [&](const char* p) {
    return ("," + parts + ",").find("," + std::string(p) + ",") != std::string::npos;
  };
  std::fprintf(stderr, "(5) conversion%s\n", reuse ? " (reused from an earlier run)" : "");
  std::string main_store;
  if (reuse) {
    main_store = StoreDir(work, codecs[0], false);
    std::ifstream in(work + "/convert.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    w.Key("convert").Raw(text.empty() ? "[]" : text);
  } else {
    // The reader's decode rate of the same input: every stored branch decoded by the column
    // reader on one thread, before and after the conversions (the best of the two counts).
    std::vector<std::string> all;
    for (int32_t li : StoredLeaves(tree->info()))
      all.push_back(tree->info().leaves[static_cast<size_t>(li)].name);
    const double load0 = LoadAverage();
    ScanResult decode1 = ScanColumns(*tree, all, false);
    std::fprintf(stderr, "  reader decode (round 1): %.1f s (load %.1f)\n", decode1.seconds, load0);
    JsonWriter cw;
    cw.BeginArray();
    // Every codec with the defaults, then the first codec with the scan copy (J chunks).
    std::vector<std::pair<std::string, bool>> variants;
    for (const std::string& c : codecs)
      variants.emplace_back(c, false);
    variants.emplace_back(codecs[0], true);
    for (const auto& [c, scan_copy] : variants) {
      const std::string dir = StoreDir(work, c, scan_copy);
      store::ConvertOptions o;
      o.inputs = {root};
      o.out_dir = dir;
      o.block_size = block;
      o.j_chunks = scan_copy;
      o.codec = Must(codec::Setting::Parse(c));
      std::filesystem::remove_all(dir);
      const double load = LoadAverage();
      const double c0 = CpuNow();
      auto rep = Must(store::Convert(o));
      const double cpu = CpuNow() - c0;
      auto t0 = Clock::now();
      auto s = Must(store::Store::Open(dir));
      auto v = Must(s->Verify());
      const double verify_s = Since(t0);
      const uint64_t alloc = DirBytes(dir, true);
      cw.BeginObject()
          .Field("codec", c)
          .Field("scan_copy", scan_copy)
          .Field("seconds", rep.seconds)
          .Field("cpu_seconds", cpu)
          .Field("load_before", load)
          .Field("verify_seconds", verify_s);
      cw.Field("store_bytes_allocated", alloc).Field("store_bytes_apparent", DirBytes(dir, false));
      cw.Field("ratio_to_root", static_cast<double>(alloc) / static_cast<double>(root_bytes));
      cw.Field("events_per_c_block", uint64_t{1} << rep.manifest.log2_kc)
          .Field("padding", rep.manifest.padding);
      cw.Field("grid_slots", rep.manifest.events + rep.manifest.padding)
          .Field("record_size", static_cast<uint64_t>(rep.manifest.record_size()));
      cw.Field("decode_cpu_seconds", rep.decode_cpu_seconds)
          .Field("threads", static_cast<uint64_t>(rep.threads));
      cw.Field("mb_per_second", static_cast<double>(root_bytes) / rep.seconds / 1e6);
      cw.Field("rate_ratio_to_reader", decode1.seconds / rep.seconds);
      // What the wall-clock ratio would be on two cores of its own (the machine may be
      // shared): the reader's decode CPU against the conversion's CPU spread over 2 threads.
      cw.Field("rate_ratio_cpu_two_threads", decode1.cpu / (cpu / 2));
      cw.Field("rate_ratio_to_reader_in_process", rep.decode_cpu_seconds / rep.seconds);
      cw.Field("verified_records", v.records).EndObject();
      std::fprintf(stderr,
                   "  %-8s%s %7.1f s convert (cpu %.1f s, load %.1f), %6.1f s verify, %s "
                   "allocated (%.3fx ROOT), Kc=%llu, rate %.2fx the reader's decode\n",
                   c.c_str(), scan_copy ? " +scan copy" : "", rep.seconds, cpu, load, verify_s,
                   HumanBytes(static_cast<double>(alloc)).c_str(),
                   static_cast<double>(alloc) / static_cast<double>(root_bytes),
                   static_cast<unsigned long long>(uint64_t{1} << rep.manifest.log2_kc),
                   decode1.seconds / rep.seconds);
      if (main_store.empty()) {
        main_store = dir;
        targets.convert_rate = decode1.seconds / rep.seconds;
        targets.convert_rate_cpu = decode1.cpu / (cpu / 2);
        targets.convert_size = static_cast<double>(alloc) / static_cast<double>(root_bytes);
      }
    }
    cw.EndArray();
    const double load1 = LoadAverage();
    ScanResult decode2 = ScanColumns(*tree, all, false);
    std::fprintf(stderr, "  reader decode (round 2): %.1f s (load %.1f)\n", decode2.seconds, load1);
    std::ofstream(work + "/convert.json") << cw.str();
    w.Key("convert").Raw(cw.str());
    w.Key("reader_decode").BeginObject();
    w.Field("seconds_round1", decode1.seconds).Field("load_round1", load0);
    w.Field("seconds_round2", decode2.seconds).Field("load_round2", load1);
    w.Field("mb_per_second",
            static_cast<double>(root_bytes) / std::min(decode1.seconds, decode2.seconds) / 1e6);
    w.EndObject();
  }
  const std::string scan_copy_store = StoreDir(work, codecs[0], true);

  // (1) scattered picks.
  Picks picks = MakePicks(*tree, npicks);
  if (part("picks")) {
    std::fprintf(stderr, "(1) %zu scattered events, every branch\n", npicks);
    std::vector<int64_t> base(
        picks.entries.begin(),
        picks.entries.begin() + static_cast<ptrdiff_t>(std::min(nbase, picks.entries.size())));
    w.Key("picks").BeginObject().Field("events", static_cast<uint64_t>(npicks));
    PickResult sp = PickStore(main_store, store::IoMode::kPread, picks.ids);
    PickResult sm = PickStore(main_store, store::IoMode::kMmap, picks.ids);
    PickResult ba = PickBaskets(*tree, base);
    PickResult cl = PickClusters(*tree, base);
    WritePick(w, "store_pread", sp);
    WritePick(w, "store_mmap", sm);
    WritePick(w, "tree_baskets", ba);
    WritePick(w, "tree_cluster_cache", cl);
    const double per_store = sp.seconds / static_cast<double>(sp.events);
    w.Field("speedup_vs_baskets", (ba.seconds / static_cast<double>(ba.events)) / per_store);
    w.Field("speedup_vs_cluster_cache", (cl.seconds / static_cast<double>(cl.events)) / per_store);
    auto per_cpu = [](const PickResult& x) {
      return x.cpu / static_cast<double>(std::max<size_t>(1, x.events));
    };
    w.Field("cpu_speedup_vs_baskets", per_cpu(ba) / per_cpu(sp));
    targets.pick_pread = per_cpu(ba) / per_cpu(sp);
    targets.pick_mmap = per_cpu(ba) / per_cpu(sm);
    w.Field("cpu_speedup_mmap_vs_baskets", per_cpu(ba) / per_cpu(sm));
    w.Field("cpu_speedup_vs_cluster_cache", per_cpu(cl) / per_cpu(sp));
    w.Field("speedup_mmap_vs_baskets", (ba.seconds / static_cast<double>(ba.events))
                                           / (sm.seconds / static_cast<double>(sm.events)));
    const PageCosts pc = MeasurePageCosts(LargestShard(main_store));
    targets.fault_us = pc.fault_us;
    targets.pread_us = pc.pread_us;
    w.Key("page_costs")
        .BeginObject()
        .Field("mmap_first_touch_us", pc.fault_us)
        .Field("pread_4k_us", pc.pread_us)
        .EndObject();
    w.EndObject();
    std::fprintf(stderr,
                 "  a cached page on this machine: first touch through a mapping %.2f us, "
                 "4 KiB pread %.2f us\n",
                 pc.fault_us, pc.pread_us);
    std::fprintf(
        stderr,
        "  speedup per event vs basket traversal: %.0fx (pread), %.0fx (mmap); vs cluster cache "
        "%.0fx\n",
        (ba.seconds / static_cast<double>(ba.events)) / per_store,
        (ba.seconds / static_cast<double>(ba.events))
            / (sm.seconds / static_cast<double>(sm.events)),
        (cl.seconds / static_cast<double>(cl.events)) / per_store);
  }
  // (2) full scan of every field.
  if (part("full")) {
    std::fprintf(stderr, "(2) full scan, every branch\n");
    std::vector<std::string> all;
    for (int32_t li : StoredLeaves(tree->info()))
      all.push_back(tree->info().leaves[static_cast<size_t>(li)].name);
    w.Key("full_scan").BeginObject();
    const ScanResult full = ScanStore(main_store, store::IoMode::kPread, all, false);
    targets.full_scan_s = full.seconds;
    WriteScan(w, "store_pread", full);
    WriteScan(w, "store_mmap", ScanStore(main_store, store::IoMode::kMmap, all, false));
    WriteScan(w, "tree_cluster_reader", ScanColumns(*tree, all, false));
    w.EndObject();
  }
  // (3) two-column scan: MET_pt > 25 && nMuon >= 1, count and mean MET_pt.
  if (part("two")) {
    std::fprintf(stderr, "(3) two-column scan: MET_pt > 25 && nMuon >= 1\n");
    std::vector<std::string> two = {"MET_pt", "nMuon"};
    w.Key("two_column_scan").BeginObject();
    ScanResult s2p = ScanStore(main_store, store::IoMode::kPread, two, true);
    ScanResult s2m = ScanStore(main_store, store::IoMode::kMmap, two, true);
    ScanResult c2 = ScanColumns(*tree, two, true);
    WriteScan(w, "store_pread", s2p);
    WriteScan(w, "store_mmap", s2m);
    WriteScan(w, "tree_column_reader", c2);
    w.Field("identical", s2p.selected == c2.selected && s2p.mean == c2.mean && s2m.mean == c2.mean);
    w.Field("store_over_column_reader_time", s2p.seconds / c2.seconds);
    w.Field("store_over_column_reader_cpu", s2p.cpu / c2.cpu);
    w.Field("store_mmap_over_column_reader_cpu", s2m.cpu / c2.cpu);
    w.EndObject();
  }
  // A jagged column too (Muon_pt over every event).
  if (part("jagged")) {
    std::fprintf(stderr, "(3b) jagged-column scan: Muon_pt\n");
    std::vector<std::string> jag = {"Muon_pt"};
    w.Key("jagged_column_scan").BeginObject();
    const ScanResult no_copy = ScanStore(main_store, store::IoMode::kPread, jag, false);
    targets.jagged_no_copy_s = no_copy.seconds;
    WriteScan(w, "store_pread", no_copy);
    WriteScan(w, "store_mmap", ScanStore(main_store, store::IoMode::kMmap, jag, false));
    if (std::filesystem::exists(scan_copy_store + "/MANIFEST")) {
      WriteScan(w, "store_scan_copy_pread",
                ScanStore(scan_copy_store, store::IoMode::kPread, jag, false));
      WriteScan(w, "store_scan_copy_mmap",
                ScanStore(scan_copy_store, store::IoMode::kMmap, jag, false));
    }
    WriteScan(w, "tree_column_reader", ScanColumns(*tree, jag, false));
    w.EndObject();
  }
  if (part("copies")) {
    RunCopies(main_store, work, *tree, root_bytes, w, &targets);
  }
  WriteTargets(w, targets);
  w.EndObject();
  FILE* f = std::fopen(json_path.c_str(), "w");
  if (f == nullptr) {
    std::perror(json_path.c_str());
    return 1;
  }
  std::fprintf(f, "%s\n", w.str().c_str());
  std::fclose(f);
  std::fprintf(stderr, "wrote %s\n", json_path.c_str());
  // The pick list for jsroot and strace runs: entry numbers, one per line.
  FILE* l = std::fopen((work + "/picks.txt").c_str(), "w");
  for (int64_t e : picks.entries)
    std::fprintf(l, "%lld\n", static_cast<long long>(e));
  std::fclose(l);
  return 0;
}

int PickOnly(int argc, char** argv) {
  const std::string root = Opt(argc, argv, "--root", "");
  const std::string dir = Opt(argc, argv, "--store", "");
  const std::string mode = Opt(argc, argv, "--mode", "pread");
  const size_t n = static_cast<size_t>(Must(ParseInt(Opt(argc, argv, "--picks", "2000"))));
  auto file = Must(rootio::RootFile::OpenPath(root));
  auto tree = Must(file->OpenTree("Events"));
  Picks picks = MakePicks(*tree, n);
  PickResult r;
  if (mode == "basket") {
    r = PickBaskets(*tree, picks.entries);
  } else if (mode == "cluster") {
    r = PickClusters(*tree, picks.entries);
  } else {
    r = PickStore(dir, mode == "mmap" ? store::IoMode::kMmap : store::IoMode::kPread, picks.ids);
  }
  std::printf("{\"mode\":\"%s\",\"events\":%zu,\"seconds\":%.6f,\"cpu_s\":%.6f,\"reads\":%llu}\n",
              mode.c_str(), r.events, r.seconds, r.cpu, static_cast<unsigned long long>(r.reads));
  return 0;
}

// (6) Remote picks: the store over root:// against ferry's TTree reader over root:// (basket
// traversal, as ROOT's GetEntry loop), the same scattered events; XRootD requests counted.
int Remote(int argc, char** argv) {
  const std::string root = Opt(argc, argv, "--root", "");
  const std::string store_url = Opt(argc, argv, "--store-url", "");
  const std::string root_url = Opt(argc, argv, "--root-url", "");
  const std::string json_path = Opt(argc, argv, "--json", "out/bench/store-remote.json");
  const size_t npicks = static_cast<size_t>(Must(ParseInt(Opt(argc, argv, "--picks", "2000"))));
  const size_t nbase =
      static_cast<size_t>(Must(ParseInt(Opt(argc, argv, "--baseline-picks", "2"))));
  auto file = Must(rootio::RootFile::OpenPath(root));
  auto tree = Must(file->OpenTree("Events"));
  Picks picks = MakePicks(*tree, npicks);
  JsonWriter w(1);
  w.BeginObject().Field("store_url", store_url).Field("root_url", root_url);
  w.Field("load_before", LoadAverage());
  std::fprintf(stderr, "(6) %zu scattered events from %s\n", npicks, store_url.c_str());
  PickResult sp = PickStore(store_url, store::IoMode::kPread, picks.ids);
  WritePick(w, "store_remote", sp);
  auto rsrc = Must(xrd::OpenSource(root_url));
  auto rfile = Must(rootio::RootFile::Open(std::move(rsrc)));
  auto rtree = Must(rfile->OpenTree("Events"));
  std::vector<int64_t> base(
      picks.entries.begin(),
      picks.entries.begin() + static_cast<ptrdiff_t>(std::min(nbase, picks.entries.size())));
  PickResult ba = PickBaskets(*rtree, base);
  WritePick(w, "tree_baskets_remote", ba);
  const double per_store = sp.seconds / static_cast<double>(sp.events);
  const double per_tree = ba.seconds / static_cast<double>(ba.events);
  w.Field("speedup", per_tree / per_store);
  w.Field("store_requests_per_event",
          static_cast<double>(sp.requests) / static_cast<double>(sp.events));
  w.Field("tree_requests_per_event",
          static_cast<double>(ba.requests) / static_cast<double>(ba.events));
  w.EndObject();
  std::fprintf(stderr,
               "  store %.3f ms/event (%llu requests for %zu events), TTree %.0f ms/event (%.0f "
               "requests/event): %.0fx\n",
               1e3 * per_store, static_cast<unsigned long long>(sp.requests), sp.events,
               1e3 * per_tree, static_cast<double>(ba.requests) / static_cast<double>(ba.events),
               per_tree / per_store);
  std::ofstream(json_path) << w.str() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: store_bench make-input|run|pick ... (see bench/store/store_bench.cc)\n");
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "make-input")
    return MakeInput(argc, argv);
  if (cmd == "run")
    return Run(argc, argv);
  if (cmd == "pick")
    return PickOnly(argc, argv);
  if (cmd == "remote")
    return Remote(argc, argv);
  std::fprintf(stderr, "store_bench: unknown command %s\n", cmd.c_str());
  return 2;
}
