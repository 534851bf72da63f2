// A replica's virtual file read as a copy reads it (large reads in order, which the cache
// passes through as a bulk reader's), and by reads of any size straddling each boundary of the
// virtual layout, for TTree and RNTuple files; and replicas of the ROOT-written RNTuple sample
// files (data/rntuple), each read field by field as an analysis does; and a handle that opens a
// replica has its data file read ahead.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/fd.h"
#include "cache/cache.h"
#include "cache/entry_store.h"
#include "cache/testing/cached_source.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "io/byte_source.h"
#include "io/local_source.h"
#include "replica/replica_build.h"
#include "replica/replica_testing.h"
#include "replica/replica_view.h"
#include "replica/rntuple_overlay.h"
#include "rootio/rntuple.h"
#include "rootio/root_file.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/rntuple_writer.h"
#include "rootwrite/sample_tree.h"
#include "rootwrite/tree_writer.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::replica {
namespace {

using cache::Cache;
using cache::CachedFile;
using cache::CachedSource;
using cache::Config;
using cache::MemoryOrigin;
using cache::PathsFor;

constexpr const char* kUrl = "root://origin.example:1094//data/big.root";

// Columns "a", "b", "c" of random doubles (incompressible, so that the file is large for few
// entries), entries [first, first + n).
std::vector<rootio::Column> RandomBatch(int64_t first, int64_t n, std::mt19937_64& rng) {
  std::vector<rootio::Column> cols(3);
  for (rootio::Column& c : cols) {
    c.type = rootio::LeafType::kFloat64;
    c.first_entry = first;
    c.num_entries = n;
    c.bytes.resize(static_cast<size_t>(n) * 8);
    for (size_t k = 0; k < c.bytes.size(); k += 8) {
      const uint64_t v = rng() >> 12 | uint64_t{0x3ff} << 52;  // a double in [1, 2)
      std::memcpy(c.bytes.data() + k, &v, 8);
    }
  }
  return cols;
}

constexpr int64_t kEntries = 900000;  // 3 x 7.2 MB: over BulkDetector::kMinBytes
constexpr int64_t kBatch = 100000;

template <class Writer>
Status WriteRandom(Writer& w, rootwrite::FileWriter& file) {
  for (const char* name : {"a", "b", "c"}) {
    FERRY_TRY(w.AddBranch({name, rootio::LeafType::kFloat64}));
  }
  std::mt19937_64 rng(38);
  for (int64_t first = 0; first < kEntries; first += kBatch) {
    std::vector<rootio::Column> cols = RandomBatch(first, kBatch, rng);
    std::vector<const rootio::Column*> ptrs;
    ptrs.reserve(cols.size());
    for (const rootio::Column& c : cols) {
      ptrs.push_back(&c);
    }
    FERRY_TRY(w.WriteColumns(ptrs));
  }
  FERRY_TRY(w.Close());
  return file.Close();
}

std::vector<uint8_t> RandomTreeFile(const testing::TempDir& dir) {
  const std::string path = dir.File("tree.root");
  auto file = rootwrite::FileWriter::Create(path, rootwrite::sample::Fixed()).value();
  rootwrite::TreeOptions to;
  to.auto_flush = 200000;
  rootwrite::TreeWriter w(*file, to);
  Status st = WriteRandom(w, *file);
  EXPECT_TRUE(st) << st.error().ToString();
  return testing::ReadWholeFile(path);
}

std::vector<uint8_t> RandomRntupleFile(const testing::TempDir& dir) {
  const std::string path = dir.File("ntuple.root");
  auto file =
      rootwrite::FileWriter::Create(path, rootwrite::sample::Fixed({codec::Algorithm::kZstd, 1}))
          .value();
  rootwrite::RntupleOptions o;
  o.zipped_cluster_bytes = 5u << 20;
  o.page_bytes = 512u << 10;
  rootwrite::RntupleWriter w(*file, o);
  Status st = WriteRandom(w, *file);
  EXPECT_TRUE(st) << st.error().ToString();
  return testing::ReadWholeFile(path);
}

// The pages of every RNTuple of a file; nullopt when one has more than 10,000,000 entries (of
// which Values reads only the last pages).
std::optional<uint64_t> PagesOf(const std::vector<uint8_t>& bytes) {
  io::MemorySource src(bytes);
  auto f = rootio::RootFile::Open(src).value();
  const std::vector<rootio::RntupleEntry> found = rootio::FindRntuples(*f).value();
  uint64_t pages = 0;
  for (const rootio::RntupleEntry& e : found) {
    auto r = LoadRntupleRecord(*f, e.path).value();
    if (rootio::Rntuple::Open(*f, e.path).value()->entries() > 10000000) {
      return std::nullopt;
    }
    for (const auto& column : r.pages()) {
      pages += column.size();
    }
  }
  return pages;
}

std::map<std::string, std::string> ValuesOf(const std::vector<uint8_t>& bytes) {
  io::MemorySource src(bytes);
  return Values(src);
}

// Reads [offset, offset + n) of f and compares it with `want`; a message when they differ.
std::string CheckRead(CachedFile& f,
                      const std::vector<uint8_t>& want,
                      uint64_t offset,
                      uint64_t n) {
  std::vector<uint8_t> got(n);
  Status st = f.Read(offset, got);
  const std::string where = std::to_string(offset) + "+" + std::to_string(n);
  if (!st) {
    return "read " + where + ": " + st.error().ToString();
  }
  if (std::memcmp(got.data(), want.data() + offset, n) != 0) {
    const auto bad =
        std::mismatch(got.begin(), got.end(), want.begin() + static_cast<ptrdiff_t>(offset));
    return "read " + where + " differs at "
           + std::to_string(offset + static_cast<uint64_t>(bad.first - got.begin()));
  }
  return "";
}

// The boundaries of the virtual layout: the original's end, the tree records' slots, the
// patches, the data file's start, extents (the first, the last and some between) and the end.
std::vector<uint64_t> Boundaries(const ReplicaManifest& m) {
  std::set<uint64_t> b = {0, m.origin_size, m.baskets_begin, m.virtual_size};
  for (const ReplicaPatch& p : m.patches) {
    b.insert(p.offset);
    b.insert(p.offset + p.bytes.size());
  }
  for (const ReplicaRecord& r : m.records) {
    b.insert(r.offset);
    b.insert(r.offset + r.bytes.size());
    b.insert(r.offset + r.slot_bytes);
  }
  const size_t n = m.extents.size();
  const size_t stride = std::max<size_t>(1, n / 8);
  for (size_t e = 0; e < n; ++e) {
    if (e % stride == 0 || e + 1 == n) {
      b.insert(m.extents[e].offset);
      b.insert(m.extents[e].end());
    }
  }
  return {b.begin(), b.end()};
}

// Reads of 1 byte to 64 MiB ending at, straddling and starting at every boundary.
void ExpectBoundaryReads(CachedFile& f,
                         const std::vector<uint8_t>& want,
                         const std::vector<uint64_t>& boundaries) {
  const uint64_t size = want.size();
  constexpr uint64_t kMi = 1u << 20;
  const uint64_t sizes[] = {1, 4095, 4096, 4097, kMi - 1, kMi, kMi + 1, 8 * kMi, 64 * kMi};
  std::set<std::pair<uint64_t, uint64_t>> reads;
  for (uint64_t b : boundaries) {
    for (uint64_t n : sizes) {
      n = std::min(n, size);
      for (uint64_t start :
           {b - std::min(b, n), b - std::min(b, n / 2), b - std::min<uint64_t>(b, 1), b}) {
        reads.insert({std::min(start, size - n), n});
      }
    }
  }
  size_t bad = 0;
  for (const auto& [offset, n] : reads) {
    const std::string error = CheckRead(f, want, offset, n);
    if (!error.empty() && ++bad <= 5) {
      ADD_FAILURE() << error;
    }
  }
  EXPECT_EQ(bad, 0u) << "of " << reads.size() << " reads";
}

// The reproduction and the boundary reads, over a file whose replica holds `hot`.
void ExpectVirtualFileReadsWhole(const std::vector<uint8_t>& bytes,
                                 const std::set<std::string>& hot) {
  testing::TempDir dir;
  const Config config = ServingConfig(dir.path() + "/cache");
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  auto cache = Cache::Create(config).value();
  const auto original = ValuesOf(bytes);
  {
    auto f = cache->Open(kUrl, origin).value();
    CachedSource src(*f);
    ASSERT_EQ(Values(src, hot).size(), hot.size());  // the analysis: the hot columns, whole
  }
  ASSERT_TRUE(cache->Flush());
  auto built = BuildReplica(config, KeyOf(kUrl), {});
  ASSERT_TRUE(built.has_value()) << built.error().ToString();
  ASSERT_EQ(built->state, ReplicaState::kBuilt) << built->reason;
  const auto manifest = LoadManifest(PathsFor(config.dir, KeyOf(kUrl))).value();
  ASSERT_GT(manifest.virtual_size, manifest.origin_size);

  // The virtual file in 64 KiB reads (the read path's usual case), which holds the original's
  // values: the bytes every other read must return.
  std::vector<uint8_t> want(manifest.virtual_size);
  {
    auto f = cache->Open(kUrl, origin).value();
    ASSERT_TRUE(f->virtual_file());
    ASSERT_EQ(f->size(), want.size());
    for (uint64_t at = 0; at < want.size(); at += 64u << 10) {
      const uint64_t n = std::min<uint64_t>(64u << 10, want.size() - at);
      ASSERT_TRUE(f->Read(at, {want.data() + at, n})) << at;
    }
  }
  EXPECT_EQ(ValuesOf(want), original);
  const std::vector<uint64_t> boundaries = Boundaries(manifest);

  // A copy: 8 MiB reads in order, as python's XRootD client makes, on a handle that watches for
  // bulk readers (the XrdCl plug-in's). It turns into one after a quarter of the file, and its
  // reads then pass the original region through uncached.
  cache::OpenOptions copy;
  copy.detect_bulk = true;
  {
    auto f = cache->Open(kUrl, origin, copy).value();
    for (uint64_t at = 0; at < want.size(); at += 8u << 20) {
      const std::string error =
          CheckRead(*f, want, at, std::min<uint64_t>(8u << 20, want.size() - at));
      ASSERT_EQ(error, "");
    }
    EXPECT_TRUE(f->bypassing());
    ExpectBoundaryReads(*f, want, boundaries);
  }
  // The same reads on a handle that caches them.
  auto f = cache->Open(kUrl, origin).value();
  ExpectBoundaryReads(*f, want, boundaries);
  EXPECT_FALSE(f->bypassing());
}

// Without an access trace (a pass whose reads left none) the replica takes what the byte tier
// holds whole. A column range it holds in part (read-ahead brought some of its pages) was
// asked for by no one: it stays where it is, and the replica is built, not partial with it
// missing, which no later pass would complete.
TEST(ReplicaVirtualFile, WithoutATraceAnRntupleRangeHeldInPartIsNotMissing) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = RandomRntupleFile(dir);
  const Config config = ServingConfig(dir.path() + "/cache");
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  auto cache = Cache::Create(config).value();
  {
    auto f = cache->Open(kUrl, origin).value();
    // All but 64 KiB in the middle: inside a page of some column's range in a cluster.
    const uint64_t hole = bytes.size() / 2 & ~uint64_t{0xffff};
    std::vector<uint8_t> buf(bytes.size());
    ASSERT_TRUE(f->Read(0, {buf.data(), hole}));
    ASSERT_TRUE(f->Read(hole + 0x10000, {buf.data(), bytes.size() - hole - 0x10000}));
  }
  ASSERT_TRUE(cache->Flush());
  const std::string trace = PathsFor(config.dir, KeyOf(kUrl)).trace();
  ASSERT_EQ(::truncate(trace.c_str(), 0), 0);
  auto built = BuildReplica(config, KeyOf(kUrl), {});
  ASSERT_TRUE(built.has_value()) << built.error().ToString();
  EXPECT_EQ(built->state, ReplicaState::kBuilt) << built->reason;
  EXPECT_EQ(built->missing_baskets, 0u);
  ASSERT_GT(built->baskets, 0u);
  const auto manifest = LoadManifest(PathsFor(config.dir, KeyOf(kUrl))).value();
  std::vector<uint8_t> virtual_bytes(manifest.virtual_size);
  auto f = cache->Open(kUrl, origin).value();
  ASSERT_TRUE(f->virtual_file());
  ASSERT_TRUE(f->Read(0, virtual_bytes));
  EXPECT_EQ(ValuesOf(virtual_bytes), ValuesOf(bytes));
}

TEST(ReplicaVirtualFile, TreeReadsWholeAndAcrossEveryBoundary) {
  testing::TempDir dir;
  ExpectVirtualFileReadsWhole(RandomTreeFile(dir), {"Events/a", "Events/b"});
}

TEST(ReplicaVirtualFile, RntupleReadsWholeAndAcrossEveryBoundary) {
  testing::TempDir dir;
  ExpectVirtualFileReadsWhole(RandomRntupleFile(dir), {"Events/a", "Events/b"});
}

// Every ROOT-written sample RNTuple, each field read on its own as an analysis reads it: a
// replica is built, and its virtual file holds the original's values.
TEST(ReplicaVirtualFile, RootWrittenRntuplesGetReplicas) {
  if (testing::RntupleDataDir().empty()) {
    GTEST_SKIP() << "data/rntuple not present";
  }
  for (const std::string& path : testing::AllRntupleDataFiles()) {
    SCOPED_TRACE(path);
    testing::TempDir dir;
    const Config config = ServingConfig(dir.path() + "/cache");
    const std::vector<uint8_t> bytes = testing::ReadWholeFile(path);
    auto origin = std::make_shared<MemoryOrigin>(bytes);
    auto cache = Cache::Create(config).value();
    const auto original = ValuesOf(bytes);
    ASSERT_FALSE(original.empty());
    {
      auto f = cache->Open(kUrl, origin).value();
      CachedSource src(*f);
      for (const auto& [name, values] : original) {
        ASSERT_EQ(Values(src, {name}).at(name), values) << name;
      }
    }
    ASSERT_TRUE(cache->Flush());
    auto built = BuildReplica(config, KeyOf(kUrl), {});
    ASSERT_TRUE(built.has_value()) << built.error().ToString();
    EXPECT_EQ(built->state, ReplicaState::kBuilt) << built->reason;
    // Every page was read, so every page is relocated: tiny ones that the pass's first reads
    // fetched beside the metadata, and those several columns share (ROOT writes identical
    // pages once).
    if (const std::optional<uint64_t> pages = PagesOf(bytes)) {
      EXPECT_EQ(built->baskets, *pages);
    }
    auto f = cache->Open(kUrl, origin).value();
    ASSERT_EQ(f->virtual_file(), built->state == ReplicaState::kBuilt);
    CachedSource src(*f);
    EXPECT_EQ(Values(src), original);
  }
}

// The pages of the file at `path` that the page cache holds, and its pages.
std::pair<size_t, size_t> ResidentPages(const std::string& path) {
  Fd fd = Fd::Open(path, O_RDONLY).value();
  const uint64_t size = FileSize(fd.get()).value();
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t pages = (size + page - 1) / page;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  EXPECT_NE(map, MAP_FAILED);
  std::vector<unsigned char> in(pages);
  EXPECT_EQ(::mincore(map, size, in.data()), 0);
  ::munmap(map, size);
  return {static_cast<size_t>(
              std::count_if(in.begin(), in.end(), [](unsigned char c) { return (c & 1) != 0; })),
          pages};
}

// A handle that opens a replica has the kernel read its data file ahead, before any read: the
// page cache may have dropped it since the build (a VM host's proactive reclaim drops cold
// pages), and a pass would then wait for the disk run after run (issue 38: the replica pass
// at 0.86x the byte tier's with 2.9 s of I/O wait).
TEST(ReplicaVirtualFile, OpenReadsTheDataFileAhead) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = RandomTreeFile(dir);
  const Config config = ServingConfig(dir.path() + "/cache");
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  auto cache = Cache::Create(config).value();
  {
    auto f = cache->Open(kUrl, origin).value();
    CachedSource src(*f);
    ASSERT_EQ(Values(src, {"Events/a", "Events/b"}).size(), 2u);
  }
  ASSERT_TRUE(cache->Flush());
  auto built = BuildReplica(config, KeyOf(kUrl), {});
  ASSERT_TRUE(built.has_value()) << built.error().ToString();
  ASSERT_EQ(built->state, ReplicaState::kBuilt) << built->reason;
  const std::string data = PathsFor(config.dir, KeyOf(kUrl)).replica_data(built->generation);
  {
    Fd fd = Fd::Open(data, O_RDONLY).value();
    ASSERT_EQ(::fdatasync(fd.get()), 0);
    ASSERT_EQ(::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED), 0);
  }
  const auto [dropped, pages] = ResidentPages(data);
  ASSERT_GT(pages, 1000u);  // two columns of 7.2 MB
  if (dropped * 2 > pages) {
    GTEST_SKIP() << "this file system keeps the pages of " << data;
  }
  auto f = cache->Open(kUrl, origin).value();
  ASSERT_TRUE(f->virtual_file());
  // The reads the advice started, waited for (no read of ours brings a page in).
  size_t resident = dropped;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (resident < pages && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    resident = ResidentPages(data).first;
  }
  EXPECT_EQ(resident, pages);
}

}  // namespace
}  // namespace ferry::replica
