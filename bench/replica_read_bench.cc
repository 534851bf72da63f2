// replica_read_bench: what a warm read of a replica's re-located baskets costs per byte, a plain
// replica against a sealed one (an encrypted cache's: docs/format/replica.md, "Sealed
// replicas"), through the cache's own read path (CachedFile::ReadV -> ReplicaView::Read).
//
// FILE (a ROOT file with TTrees, e.g. `ferry gen nanoaod`) is read whole through two caches in
// a temporary directory, one plain and one with a master key; each gets a stage-1 replica of
// every basket (relocated as stored: no codec runs, the extents are the original baskets). Then
// the extents are read as an analysis's cluster reads them: vector reads of 64 extents, one
// request per extent (so each run tiles its extents: ReplicaView's one-preadv path), every
// extent of the file PASSES times per round, plain and sealed alternating ROUNDS times. The
// origin is a file in memory, never asked during the timed reads (the check: origin reads).
// Reported: CPU time of the reading thread (CLOCK_THREAD_CPUTIME_ID: pread's copy, the CRC32C
// or the AES-GCM open, and what the read path adds), as ns per KiB and GB/s of one core; best
// and median round (the machine is shared: the best is the least disturbed).
//
// usage: replica_read_bench FILE [-r ROUNDS (7)] [-n PASSES (10)]
// Prints one JSON object on stdout.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/entry_store.h"
#include "cache/page_seal.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "replica/hooks.h"
#include "replica/replica_build.h"
#include "replica/replica_view.h"

namespace {

using namespace ferry;  // NOLINT(google-build-using-namespace): a benchmark's main file

constexpr const char* kUrl = "root://origin.example:1094//bench/replica.root";
constexpr size_t kExtentsPerRead = 64;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// What went wrong, on stderr; the exit status.
int Fail(const std::string& what) {
  std::fprintf(stderr, "replica_read_bench: %s\n", what.c_str());
  return 1;
}

// One cache with a replica of FILE, and a handle on its virtual file.
struct Replica {
  std::string name;
  cache::Config config;
  std::shared_ptr<cache::Cache> cache;
  std::unique_ptr<cache::CachedFile> file;
  std::vector<replica::ReplicaExtent> extents;
  std::vector<uint8_t> buffer;  // the virtual file's extents land here
  std::vector<double> ns_per_kib;
};

cache::Config MakeConfig(const std::string& dir, std::shared_ptr<const cache::MasterKey> key) {
  cache::Config c;
  c.dir = dir;
  c.max_bytes = 8ull << 30;
  c.min_free_bytes = 0;
  c.sync = false;
  c.replica = cache::ReplicaMode::kManual;
  c.replica_hooks = replica::Hooks();
  c.master_key = std::move(key);
  return c;
}

// The manifest of the replica the cache of `config` built, opened as the cache opens it.
replica::ReplicaManifest LoadBuilt(const cache::Config& config, const std::string& key) {
  const cache::EntryPaths paths = cache::PathsFor(config.dir, key);
  if (config.master_key == nullptr) {
    return replica::LoadManifest(paths).value();
  }
  const cache::IndexInfo info = cache::LoadIndex(paths.idx()).value().info();
  cache::KeyBytes data_key = config.master_key->Unwrap(info.wrapped_key).value();
  const cache::PageSealer entry(data_key, std::strtoull(key.c_str(), nullptr, 16), info.epoch);
  cache::WipeKey(data_key);
  return replica::LoadManifest(paths, &entry).value();
}

// Fills r's cache from `origin`, builds the replica and opens it; the failure, or empty.
std::string Prepare(Replica& r, const std::shared_ptr<cache::MemoryOrigin>& origin) {
  r.cache = cache::Cache::Create(r.config).value();
  // In 1 MiB reads, as an application reads (one whole-file read is a copy, which the cache
  // keeps only a share of), until the cache holds the whole file (the write-behind drops what
  // it cannot keep up with; a pass stores it then), at most 8 passes.
  for (int pass = 0;; ++pass) {
    auto f = r.cache->Open(kUrl, origin).value();
    if (f->held_bytes() >= f->size()) {
      break;
    }
    if (pass == 8) {
      return "the " + r.name + " cache does not keep the whole file";
    }
    std::vector<uint8_t> chunk(1 << 20);
    for (uint64_t at = 0; at < f->size(); at += chunk.size()) {
      const uint64_t n = std::min<uint64_t>(chunk.size(), f->size() - at);
      if (!f->Read(at, std::span<uint8_t>(chunk).first(n))) {
        return "filling the " + r.name + " cache failed";
      }
    }
    f->Close();
    if (!r.cache->Flush()) {
      return "flush";
    }
  }
  const std::string key = cache::EntryKey(cache::NormalizeUrl(kUrl, {}).value());
  replica::ReplicaBuildOptions options;
  options.stage = replica::ReplicaStage::kRelocate;
  auto built = replica::BuildReplica(r.config, key, options);
  if (!built || built->state != replica::ReplicaState::kBuilt) {
    return "no " + r.name + " replica: " + (built ? built->reason : built.error().ToString());
  }
  r.extents = LoadBuilt(r.config, key).extents;
  r.file = r.cache->Open(kUrl, origin).value();
  if (!r.file->virtual_file()) {
    return "the " + r.name + " handle does not serve the replica";
  }
  r.buffer.resize(r.file->size());
  return "";
}

// One round: every extent `passes` times in vector reads of kExtentsPerRead extents; false when
// a read failed.
bool Round(Replica& r, int passes) {
  std::vector<io::ReadRequest> reqs;
  uint64_t bytes = 0;
  const double t0 = ThreadCpuSeconds();
  for (int p = 0; p < passes; ++p) {
    for (size_t i = 0; i < r.extents.size(); i += kExtentsPerRead) {
      reqs.clear();
      for (size_t k = i; k < std::min(r.extents.size(), i + kExtentsPerRead); ++k) {
        const replica::ReplicaExtent& x = r.extents[k];
        reqs.push_back({x.offset, std::span<uint8_t>(r.buffer).subspan(x.offset, x.bytes), {}});
        bytes += x.bytes;
      }
      if (!r.file->ReadV(reqs)) {
        return false;
      }
    }
  }
  r.ns_per_kib.push_back((ThreadCpuSeconds() - t0) * 1e9 / (static_cast<double>(bytes) / 1024));
  return true;
}

void Print(const Replica& r, bool last) {
  std::vector<double> v = r.ns_per_kib;
  std::sort(v.begin(), v.end());
  uint64_t bytes = 0;
  for (const replica::ReplicaExtent& x : r.extents) {
    bytes += x.bytes;
  }
  std::printf(
      "  \"%s\": {\"extents\": %zu, \"extent_bytes\": %llu, \"best_ns_per_kib\": %.1f,"
      " \"median_ns_per_kib\": %.1f, \"best_gb_per_s\": %.3f, \"rounds_ns_per_kib\": [",
      r.name.c_str(), r.extents.size(), static_cast<unsigned long long>(bytes), v.front(),
      v[v.size() / 2], 1024 / v.front());
  for (size_t i = 0; i < r.ns_per_kib.size(); ++i) {
    std::printf("%s%.1f", i ? ", " : "", r.ns_per_kib[i]);
  }
  std::printf("]}%s\n", last ? "" : ",");
}

int Run(int argc, char** argv) {
  if (argc < 2) {
    return Fail("usage: replica_read_bench FILE [-r ROUNDS] [-n PASSES]");
  }
  int rounds = 7;
  int passes = 10;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "-r") == 0) {
      rounds = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "-n") == 0) {
      passes = std::atoi(argv[i + 1]);
    }
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in || bytes.empty()) {
    return Fail(std::string("cannot read ") + argv[1]);
  }
  auto origin = std::make_shared<cache::MemoryOrigin>(std::move(bytes));
  char tmpl[] = "/tmp/replica-read-bench.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    return Fail("mkdtemp");
  }
  const std::string dir = tmpl;
  cache::KeyBytes k{};
  k.fill(0x42);
  auto key = std::make_shared<const cache::MasterKey>(cache::MasterKey::FromBytes(k));
  Replica plain{"plain", MakeConfig(dir + "/plain", nullptr)};
  Replica sealed{"sealed", MakeConfig(dir + "/sealed", key)};
  for (Replica* r : {&plain, &sealed}) {
    const std::string failed = Prepare(*r, origin);
    if (!failed.empty()) {
      std::filesystem::remove_all(dir);
      return Fail(failed);
    }
  }
  const uint64_t origin_reads = origin->read_calls();
  for (int i = 0; i < rounds; ++i) {
    if (!Round(i % 2 == 0 ? plain : sealed, passes)
        || !Round(i % 2 == 0 ? sealed : plain, passes)) {
      std::filesystem::remove_all(dir);
      return Fail("a read of a replica failed");
    }
  }
  std::printf("{\"file\": \"%s\", \"rounds\": %d, \"passes\": %d, \"extents_per_read\": %zu,\n",
              argv[1], rounds, passes, kExtentsPerRead);
  std::printf("  \"timed_origin_reads\": %llu,\n",
              static_cast<unsigned long long>(origin->read_calls() - origin_reads));
  Print(plain, false);
  Print(sealed, true);
  std::printf("}\n");
  plain.file.reset();
  sealed.file.reset();
  plain.cache.reset();
  sealed.cache.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {  // a Result's value() of an error, bad_alloc
    return Fail(e.what());
  }
}
