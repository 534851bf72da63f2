// Read-ahead of the client cache over a MemoryOrigin with a round-trip delay, on ROOT files
// written by rootwrite: cluster passes (bytes identical to the origin's, predictions used,
// nothing fetched twice, nothing unused), a reader with its own read-ahead, a file replaced at
// the origin between passes, random reads, files that are not ROOT files, warm passes, the
// branch memory's scopes, sequential read-ahead, the link meter.
#include "readahead/file_ahead.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/mutex.h"
#include "cache/cache.h"
#include "cache/entry_store.h"
#include "cache/testing/cached_source.h"
#include "cache/testing/memory_origin.h"
#include "cache/testing/recording_replica_hooks.h"
#include "cache/url.h"
#include "readahead/link_meter.h"
#include "rootio/rntuple.h"
#include "rootio/root_file.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/rntuple_writer.h"
#include "rootwrite/sample_tree.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::readahead {
namespace {

using cache::Cache;
using cache::CachedFile;
using cache::CachedSource;
using cache::Config;
using cache::Counter;
using cache::EntryKey;
using cache::MemoryOrigin;
using cache::NormalizeUrl;
using cache::OpenOptions;
using cache::PathsFor;
using cache::RecordingReplicaHooks;

constexpr const char* kUrl = "root://origin.example:1094//data/ahead.root";
// Another file of the same dataset (the same bytes, its own cache entry).
constexpr const char* kSecondUrl = "root://origin.example:1094//data/ahead-2.root";
const std::vector<std::string> kBranches = {"nJet", "Jet_pt", "d", "i32"};

// The sample tree (1000 entries) in clusters of `per_cluster` entries.
std::vector<uint8_t> SampleFile(const testing::TempDir& dir,
                                int per_cluster,
                                codec::Setting setting = {codec::Algorithm::kZlib, 1}) {
  rootwrite::TreeOptions to;
  to.auto_flush = per_cluster;
  to.basket_size = 32000;
  const std::string path = dir.File("sample-" + std::to_string(per_cluster) + ".root");
  Status st = rootwrite::sample::Write(path, rootwrite::sample::Fixed(setting), to, false);
  EXPECT_TRUE(st) << st.error().ToString();
  return testing::ReadWholeFile(path);
}

// One cluster's vector read of the baskets of `branches`, as TTreeCache makes it.
using Unit = std::vector<fetch::Range>;

// The units of a pass over `branches`, from the file's own metadata.
std::vector<Unit> Units(const std::vector<uint8_t>& bytes,
                        const std::vector<std::string>& branches) {
  io::MemorySource src(bytes);
  auto file = rootio::RootFile::Open(src);
  EXPECT_TRUE(file.has_value());
  auto tree = (*file)->OpenTree("Events");
  EXPECT_TRUE(tree.has_value());
  const rootio::TreeInfo& info = (*tree)->info();
  std::vector<Unit> units;
  for (const rootio::EntryRange& cluster : info.Clusters()) {
    Unit u;
    for (const std::string& name : branches) {
      const int32_t b = info.FindBranch(name);
      for (size_t k : (*tree)->BasketsOverlapping(b, cluster)) {
        const rootio::BasketRef& ref = info.branches[static_cast<size_t>(b)].baskets[k];
        if (ref.seek != 0) {
          u.push_back({ref.seek, ref.bytes});
        }
      }
    }
    units.push_back(std::move(u));
  }
  return units;
}

uint64_t Bytes(const std::vector<Unit>& units) {
  uint64_t n = 0;
  for (const Unit& u : units) {
    n += fetch::TotalBytes(u);
  }
  return n;
}

// Reads one unit through the handle and checks every byte against `truth`.
void ReadUnit(CachedFile& f, const Unit& unit, const std::vector<uint8_t>& truth) {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<io::ReadRequest> requests;
  buffers.reserve(unit.size());
  for (const fetch::Range& r : unit) {
    buffers.emplace_back(r.length);
    requests.push_back({r.offset, buffers.back(), {}});
  }
  ASSERT_TRUE(f.ReadV(requests));
  for (size_t i = 0; i < unit.size(); ++i) {
    ASSERT_TRUE(std::equal(buffers[i].begin(), buffers[i].end(),
                           truth.begin() + static_cast<long>(unit[i].offset)))
        << "bytes at " << unit[i].offset << " differ from the origin's";
  }
}

// A pass: every unit in order.
void ReadAll(CachedFile& f, const std::vector<Unit>& units, const std::vector<uint8_t>& truth) {
  for (const Unit& u : units) {
    ReadUnit(f, u, truth);
  }
}

// What a ROOT reader does first: the header, keys and the tree record, through the handle.
void OpenTree(CachedFile& f) {
  CachedSource src(f);
  auto file = rootio::RootFile::Open(src);
  ASSERT_TRUE(file.has_value()) << file.error().ToString();
  ASSERT_TRUE((*file)->OpenTree("Events").has_value());
}

struct Fixture {
  testing::TempDir dir;
  Config config = testing::CacheTestConfig(dir.path() + "/cache");
  std::vector<uint8_t> bytes;
  std::shared_ptr<MemoryOrigin> origin;
  std::shared_ptr<Cache> cache;

  explicit Fixture(int per_cluster = 50, int delay_ms = 3) {
    bytes = SampleFile(dir, per_cluster);
    origin = std::make_shared<MemoryOrigin>(bytes, 1700000000, /*channels=*/2);
    origin->SetReadDelay(std::chrono::milliseconds(delay_ms));
    config.replica_hooks = std::make_shared<RecordingReplicaHooks>();  // the access trace is kept
    cache = Cache::Create(config).value();
  }
  std::unique_ptr<CachedFile> Open(bool ahead = true, const std::string& url = kUrl) {
    OpenOptions o;
    o.read_ahead = ahead;
    auto f = cache->Open(url, origin, o);
    EXPECT_TRUE(f.has_value()) << f.error().ToString();
    return f ? std::move(*f) : nullptr;
  }
  uint64_t Get(Counter c) const { return cache->counters().Get(c); }
  // A whole cluster pass over `url`, as an analysis makes it: open, tree, every unit, close.
  void Pass(const std::vector<Unit>& units, const std::string& url = kUrl) {
    auto f = Open(true, url);
    OpenTree(*f);
    ReadAll(*f, units, bytes);
    f->Close();
  }
};

TEST(FileAhead, AClusterPassUsesPredictionsAndFetchesEachByteOnce) {
  Fixture fx;
  const std::vector<Unit> units = Units(fx.bytes, kBranches);
  ASSERT_EQ(units.size(), 20u);
  auto f = fx.Open();
  OpenTree(*f);
  ReadAll(*f, units, fx.bytes);
  const FileAhead::Snapshot s = f->read_ahead()->snapshot();
  EXPECT_TRUE(s.on);
  f->Close();
  // The first units go out before the trees are loaded (how many depends on the machine's
  // load); the rest were predicted.
  EXPECT_GE(fx.Get(Counter::kPrefetchHits), (units.size() - 6) * kBranches.size());
  EXPECT_GT(fx.Get(Counter::kPrefetchBytes), Bytes(units) / 2);
  EXPECT_EQ(fx.Get(Counter::kPrefetchUnusedBytes), 0u);
  // Nothing twice: what came from the origin is what was read, plus the metadata, the gaps
  // the planner bridges and what rootio reads when it loads the trees.
  EXPECT_LE(fx.Get(Counter::kBytesFromOrigin), Bytes(units) + uint64_t{96} * 1024);
  EXPECT_EQ(fx.origin->bytes(), fx.Get(Counter::kBytesFromOrigin));
}

TEST(FileAhead, AReaderWithItsOwnReadAheadFetchesNothingTwice) {
  Fixture fx;
  const std::vector<Unit> units = Units(fx.bytes, kBranches);
  auto f = fx.Open();
  OpenTree(*f);
  // Six workers taking units in order, as `ferry analyze agc --threads 2 --reads 4` does.
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  workers.reserve(6);
  for (int w = 0; w < 6; ++w) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < units.size(); i = next++) {
        ReadUnit(*f, units[i], fx.bytes);
      }
    });
  }
  for (std::thread& t : workers) {
    t.join();
  }
  // Its reads overlapped: read-ahead stood aside.
  const FileAhead::Snapshot s = f->read_ahead()->snapshot();
  EXPECT_EQ(s.level, 0u);
  EXPECT_EQ(s.queued, 0u);
  f->Close();
  EXPECT_LE(fx.Get(Counter::kBytesFromOrigin), Bytes(units) + uint64_t{96} * 1024);
  EXPECT_EQ(fx.Get(Counter::kPrefetchUnusedBytes), 0u);
}

TEST(FileAhead, AFileReplacedAtTheOriginIsReadAnew) {
  Fixture fx;
  fx.config.revalidate_s = 0;  // every open checks the origin's size and mtime
  fx.cache = Cache::Create(fx.config).value();
  fx.Pass(Units(fx.bytes, kBranches));
  ASSERT_TRUE(fx.cache->Flush());
  // Another layout (LZMA, other clusters): old pages at the new offsets would be wrong bytes.
  const std::vector<uint8_t> next = SampleFile(fx.dir, 40, {codec::Algorithm::kLzma, 1});
  fx.origin->Replace(next, 1700000100);
  auto f = fx.Open();
  OpenTree(*f);
  const std::vector<Unit> units = Units(next, kBranches);
  ReadAll(*f, units, next);
  f->Close();
  EXPECT_GT(fx.Get(Counter::kPrefetchHits), 0u);
}

TEST(FileAhead, RandomReadsGetLittleReadAhead) {
  Fixture fx(/*per_cluster=*/20, /*delay_ms=*/1);
  // Tiny baskets: without this, gaps between them the planner bridges would dominate.
  fx.config.iogap = 0;
  // Small pages: a fetch into a partly held page extends to the bytes held there (one interval
  // per page), which would charge read-ahead with the neighbours of its few predictions.
  fx.config.page_size = 512;
  fx.cache = Cache::Create(fx.config).value();
  const std::vector<Unit> units = Units(fx.bytes, {"Jet_pt", "i32", "d", "u8", "flag", "f"});
  ASSERT_EQ(units.size(), 50u);
  auto f = fx.Open();
  OpenTree(*f);
  ASSERT_TRUE(f->read_ahead()->WaitDecided(10000));
  // The metadata fetched at the header miss is not read-ahead of the random reads.
  const uint64_t metadata = fx.Get(Counter::kPrefetchBytes);
  std::mt19937 rng(3);
  std::vector<size_t> order(units.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::shuffle(order.begin(), order.end(), rng);
  uint64_t read = 0;
  for (size_t i : order) {
    // One basket of one cluster: an event display, a random pick.
    const Unit one{units[i][rng() % units[i].size()]};
    ReadUnit(*f, one, fx.bytes);
    read += fetch::TotalBytes(one);
  }
  const FileAhead::Snapshot snap = f->read_ahead()->snapshot();
  f->Close();
  // At most one read's worth on probation at a time: a few small predictions in all.
  EXPECT_LE(snap.queued + snap.in_flight + snap.landed, read / 8);
  EXPECT_LE(fx.Get(Counter::kPrefetchBytes) - metadata, read / 4);
}

// The reads of `fn` that went to the origin.
template <typename Fn>
uint64_t OriginReadsOf(const MemoryOrigin& origin, Fn fn) {
  const uint64_t before = origin.read_calls();
  fn();
  return origin.read_calls() - before;
}

TEST(FileAhead, AColdFileMetadataArrivesInOneRoundTrip) {
  // 50 ms per origin request: the metadata fetch must be under way before the reader's own
  // metadata reads miss, as it is on a WAN.
  Fixture fx(50, 50);
  // The reader's header, top directory, keys list, TTree key and record: one after another,
  // each needing the one before. With the head and the tail fetched at the header
  // miss, the reader's own reads join that fetch or hit.
  auto f = fx.Open();
  const uint64_t reads = OriginReadsOf(*fx.origin, [&] { OpenTree(*f); });
  EXPECT_LE(reads, 2u);
  ASSERT_TRUE(f->read_ahead()->WaitDecided(10000));
  EXPECT_TRUE(f->read_ahead()->snapshot().on);
  f->Close();
  EXPECT_GT(fx.Get(Counter::kPrefetchBytes), 0u);
}

// An RNTuple file laid out as ferry gen writes the AGC sets: many fields (1200 floats here), so
// that the RNTuple's header, after the file's first page, reaches past it, and clusters of
// ~64 KiB, so that the page lists at the end make a footer of some size.
std::vector<uint8_t> WideRntupleFile(const testing::TempDir& dir) {
  const std::string path = dir.File("wide-rntuple.root");
  auto file = rootwrite::FileWriter::Create(path, rootwrite::sample::Fixed());
  EXPECT_TRUE(file.has_value());
  rootwrite::RntupleOptions o;
  o.zipped_cluster_bytes = 64 << 10;
  rootwrite::RntupleWriter w(**file, o);
  constexpr int kFields = 1200;
  constexpr int64_t kEntries = 1000;
  for (int k = 0; k < kFields; ++k) {
    EXPECT_TRUE(w.AddBranch({"Muon_field_" + std::to_string(k), rootio::LeafType::kFloat32}));
  }
  std::vector<rootio::Column> cols(kFields);
  std::vector<const rootio::Column*> ptrs;
  for (int k = 0; k < kFields; ++k) {
    rootio::Column& c = cols[static_cast<size_t>(k)];
    c.type = rootio::LeafType::kFloat32;
    c.num_entries = kEntries;
    c.bytes.resize(kEntries * sizeof(float));
    for (int64_t i = 0; i < kEntries; ++i) {
      const auto v = static_cast<float>((i * 7919 + k) % 1000);
      std::memcpy(c.bytes.data() + i * static_cast<int64_t>(sizeof(float)), &v, sizeof v);
    }
    ptrs.push_back(&c);
  }
  EXPECT_TRUE(w.WriteColumns(ptrs));
  EXPECT_TRUE(w.Close());
  EXPECT_TRUE((*file)->Close());
  return testing::ReadWholeFile(path);
}

// What an RNTuple reader does first: header, keys, the anchor, the RNTuple's header, footer and
// page lists, through the handle.
void OpenRntuple(CachedFile& f) {
  CachedSource src(f);
  auto file = rootio::RootFile::Open(src);
  ASSERT_TRUE(file.has_value()) << file.error().ToString();
  auto ntuple = rootio::Rntuple::Open(**file, "Events");
  ASSERT_TRUE(ntuple.has_value()) << ntuple.error().ToString();
}

TEST(FileAhead, AnRntupleFileOpenedAheadGetsItsMetadataInOneOriginRead) {
  // An RNTuple's metadata lies at both ends of its file: the header after the first page, the
  // footer and page lists at the end. A file opened ahead of its reader (WarmUp, as the
  // plug-in's next files) fetches both in one origin read once a file of its dataset showed
  // how far they reach, and the reader's open then reads nothing from the origin: before its
  // first data read, the file costs one round trip (issue 38: with the first page alone, the
  // header took a second one per file).
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = WideRntupleFile(dir);
  Config config = testing::CacheTestConfig(dir.path() + "/cache");
  auto cache = Cache::Create(config).value();
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  origin->SetReadDelay(std::chrono::milliseconds(5));
  OpenOptions o;
  o.read_ahead = true;
  auto first = cache->Open(kUrl, origin, o).value();
  OpenRntuple(*first);
  ASSERT_TRUE(first->read_ahead()->WaitDecided(10000));
  ASSERT_TRUE(first->read_ahead()->snapshot().on);
  first->Close();

  auto next = cache->Open(kSecondUrl, origin, o).value();
  EXPECT_EQ(OriginReadsOf(*origin,
                          [&] {
                            next->WarmUp();
                            ASSERT_TRUE(next->read_ahead()->WaitDecided(10000));
                          }),
            1u);
  EXPECT_TRUE(next->read_ahead()->snapshot().on);
  EXPECT_EQ(OriginReadsOf(*origin, [&] { OpenRntuple(*next); }), 0u);
  next->Close();
}

TEST(FileAhead, AFileNotNamedRootFetchesNoMetadataBeforeItsHeader) {
  Fixture fx(50, 1);
  OpenOptions o;
  o.read_ahead = true;
  auto f = fx.cache->Open("root://origin.example:1094//data/ahead.bin", fx.origin, o).value();
  ReadUnit(*f, {{0, 100}}, fx.bytes);
  EXPECT_EQ(fx.origin->bytes(), 100u);  // nothing fetched on a guess
  OpenTree(*f);                         // a ROOT file after all: loaded after the header miss
  ASSERT_TRUE(f->read_ahead()->WaitDecided(10000));
  EXPECT_TRUE(f->read_ahead()->snapshot().on);
}

TEST(FileAhead, AFileThatIsNotRootGetsNone) {
  testing::TempDir dir;
  Config config = testing::CacheTestConfig(dir.path() + "/cache");
  auto cache = Cache::Create(config).value();
  const auto bytes = testing::PseudoRandomBytes(4 << 20, 9);
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  OpenOptions o;
  o.read_ahead = true;
  // Not named *.root: nothing is fetched before the header shows what the file is.
  auto f = cache->Open("root://origin.example:1094//data/blob.bin", origin, o).value();
  ReadUnit(*f, {{0, 400}}, bytes);
  ReadUnit(*f, {{1 << 20, 10000}, {3 << 20, 5000}}, bytes);  // a miss past the header
  ASSERT_TRUE(f->read_ahead()->WaitDecided(10000));
  EXPECT_FALSE(f->read_ahead()->snapshot().on);
  for (uint64_t off = 100000; off < (4 << 20) - 20000; off += 300000) {
    ReadUnit(*f, {{off, 20000}}, bytes);
  }
  f->Close();
  EXPECT_EQ(cache->counters().Get(Counter::kPrefetchBytes), 0u);
  // Named *.root, it is taken for one at its first miss: at most the metadata guess is
  // fetched (the default head and tail), then read-ahead is off.
  auto g = cache->Open(kUrl, std::make_shared<MemoryOrigin>(bytes), o).value();
  ReadUnit(*g, {{0, 400}}, bytes);
  ASSERT_TRUE(g->read_ahead()->WaitDecided(10000));
  EXPECT_FALSE(g->read_ahead()->snapshot().on);
  g->Close();
  EXPECT_LE(cache->counters().Get(Counter::kPrefetchBytes),
            Prefetcher::kDefaultMetadataHead + Prefetcher::kDefaultMetadataTail);
}

TEST(FileAhead, AWarmPassLoadsNothing) {
  Fixture fx(50, 1);
  const std::vector<Unit> units = Units(fx.bytes, kBranches);
  fx.Pass(units);
  ASSERT_TRUE(fx.cache->Flush());
  const uint64_t before = fx.origin->read_calls();
  auto f = fx.Open();
  OpenTree(*f);
  ReadAll(*f, units, fx.bytes);
  // Nearly no miss, so the trees are (nearly always) never loaded. A page keeps one fragment
  // (docs/format/page-store.md): pieces of it that end out of order wait in memory until the
  // bytes between them arrive; a piece whose gap never came is fetched again here.
  EXPECT_LE(fx.origin->read_calls(), before + 2);
}

TEST(FileAhead, AFileOpenedAheadOfItsReadFetchesItsNextClustersMeanwhile) {
  // An analysis that opens its files up front and reads them one after another: the first
  // file teaches the branches; the second, opened and not read yet, gets its seeds and then a
  // window of its next clusters while the link is otherwise idle. Read afterwards, those are
  // hits; nothing is fetched twice, nothing is left unused.
  Fixture fx(50, 1);
  const std::vector<Unit> units = Units(fx.bytes, kBranches);
  ASSERT_EQ(units.size(), 20u);
  auto a = fx.Open();
  OpenTree(*a);
  auto b = fx.Open(true, kSecondUrl);
  OpenTree(*b);
  ReadAll(*a, units, fx.bytes);
  a->Close();
  // More than the two seeded clusters land before the second file is read at all.
  const uint64_t cluster = Bytes(units) / units.size();
  ASSERT_TRUE(b->read_ahead()->WaitLanded(4 * cluster, 10000))
      << "landed " << b->read_ahead()->snapshot().landed;
  const FileAhead::Snapshot before = b->read_ahead()->snapshot();
  EXPECT_EQ(before.hits, 0u);
  const uint64_t origin_before = fx.Get(Counter::kBytesFromOrigin);
  ReadAll(*b, units, fx.bytes);
  b->Close();
  // Every unit the window held was a hit; the rest came by the usual read-ahead.
  EXPECT_GE(b->read_ahead()->snapshot().hits, 4 * kBranches.size());
  EXPECT_EQ(fx.Get(Counter::kPrefetchUnusedBytes), 0u);
  EXPECT_LE(fx.Get(Counter::kBytesFromOrigin) - origin_before + before.landed,
            Bytes(units) + uint64_t{96} * 1024);
  // The reads read-ahead served are in the access trace (the replica's layout) like misses:
  // every unit of the pass (and the tree's metadata reads, which missed).
  ASSERT_TRUE(fx.cache->Flush());
  const std::string key = EntryKey(*NormalizeUrl(kSecondUrl, fx.config.url_params));
  // RecordingReplicaHooks writes one byte per record.
  const auto trace = testing::ReadWholeFile(PathsFor(fx.config.dir, key).trace());
  EXPECT_GE(trace.size(), units.size());
}

// A pass over a file whose bytes are all held but which has no access trace (read-ahead
// brought them before the reader asked, or the trace was lost) records its reads although
// none of them misses: the replica's layout comes from them, not from whatever else the
// cache holds. Once the file has a trace, a pass of hits adds nothing to it.
TEST(FileAhead, APassOfHitsTracesAFileThatHasNoTraceYet) {
  Fixture fx(50, 0);
  const std::vector<Unit> units = Units(fx.bytes, kBranches);
  fx.Pass(units);
  ASSERT_TRUE(fx.cache->Flush());
  const std::string trace = PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl))).trace();
  ASSERT_FALSE(testing::ReadWholeFile(trace).empty());
  fx.cache.reset();
  ASSERT_EQ(::truncate(trace.c_str(), 0), 0);
  fx.cache = Cache::Create(fx.config).value();
  const uint64_t origin_reads = fx.origin->read_calls();
  {
    auto f = fx.Open(/*ahead=*/false);
    OpenTree(*f);
    ReadAll(*f, units, fx.bytes);
    f->Close();
  }
  // Every read hits, but for a piece of a page whose neighbour never came (a page keeps one
  // fragment), fetched again: the reads before such a miss are the ones this test is about.
  ASSERT_LE(fx.origin->read_calls(), origin_reads + 2) << "(nearly) every read hit";
  ASSERT_TRUE(fx.cache->Flush());
  // RecordingReplicaHooks writes one byte per record.
  const size_t traced = testing::ReadWholeFile(trace).size();
  EXPECT_GE(traced, units.size());
  fx.Pass(units);
  ASSERT_TRUE(fx.cache->Flush());
  EXPECT_EQ(testing::ReadWholeFile(trace).size(), traced) << "a traced file's warm pass";
}

// Records of reads made before the file's first bytes are held wait for them (the trace is
// kept only for ROOT files, known by those bytes) instead of being dropped.
TEST(FileAhead, ReadsTracedBeforeTheFilesFirstBytesAreHeldAreKept) {
  Fixture fx(50, 0);
  auto f = fx.Open(/*ahead=*/false);
  std::vector<uint8_t> buf(4096);
  ASSERT_TRUE(f->Read(fx.bytes.size() / 2, buf));
  ASSERT_TRUE(fx.cache->Flush());  // stored; whether it is a ROOT file is not known yet
  ASSERT_TRUE(f->Read(0, buf));
  f->Close();
  ASSERT_TRUE(fx.cache->Flush());
  // RecordingReplicaHooks writes one byte per record.
  EXPECT_EQ(
      testing::ReadWholeFile(PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl))).trace()).size(),
      2u);
}

// The origin reads of several handles in the order they were sent, each tagged with its file.
class ReadLog {
 public:
  void Add(const std::string& tag) {
    MutexLock lock(mu_);
    tags_.push_back(tag);
  }
  std::vector<std::string> tags() const {
    MutexLock lock(mu_);
    return tags_;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> tags_ FERRY_GUARDED_BY(mu_);
};

class LoggedOrigin final : public cache::Origin {
 public:
  LoggedOrigin(std::shared_ptr<MemoryOrigin> inner, std::string tag, std::shared_ptr<ReadLog> log)
      : inner_(std::move(inner)), tag_(std::move(tag)), log_(std::move(log)) {}
  Result<cache::OriginInfo> Stat() override { return inner_->Stat(); }
  void Read(std::span<cache::OriginRead> reads) override {
    log_->Add(tag_);
    inner_->Read(reads);
  }
  size_t channels() const override { return inner_->channels(); }
  bool channel_ready(size_t channel) const override { return inner_->channel_ready(channel); }

 private:
  std::shared_ptr<MemoryOrigin> inner_;
  std::string tag_;
  std::shared_ptr<ReadLog> log_;
};

TEST(FileAhead, AReadersFirstDataReadGoesOutBeforeTheSeedsItTeaches) {
  // An in-order reader's first data read teaches the branches that seed the files opened
  // ahead; those seeds go out once the read is served, so they do not share the link with the
  // miss the application waits for (issue 38). Files of one cluster each (the LZMA-9 sets):
  // the read predicts nothing of its own file.
  Fixture fx(1000, 20);
  const std::vector<Unit> units = Units(fx.bytes, kBranches);
  ASSERT_EQ(units.size(), 1u);
  auto log = std::make_shared<ReadLog>();
  OpenOptions o;
  o.read_ahead = true;
  std::vector<std::unique_ptr<CachedFile>> ahead;
  for (int k = 0; k < 3; ++k) {
    const std::string url =
        "root://origin.example:1094//data/ahead-" + std::to_string(k + 2) + ".root";
    ahead.push_back(
        fx.cache->Open(url, std::make_shared<LoggedOrigin>(fx.origin, "ahead", log), o).value());
    ahead.back()->WarmUp();
    ASSERT_TRUE(ahead.back()->read_ahead()->WaitDecided(10000));
  }
  auto first =
      fx.cache->Open(kUrl, std::make_shared<LoggedOrigin>(fx.origin, "first", log), o).value();
  OpenTree(*first);
  ASSERT_TRUE(first->read_ahead()->WaitDecided(10000));
  const size_t before = log->tags().size();
  ReadUnit(*first, units[0], fx.bytes);
  for (auto& f : ahead) {
    ASSERT_TRUE(f->read_ahead()->WaitLanded(1, 10000));  // seeded by what the read taught
  }
  const std::vector<std::string> tags = log->tags();
  ASSERT_GT(tags.size(), before + ahead.size());
  EXPECT_EQ(tags[before], "first") << ::testing::PrintToString(tags);
  first->Close();
  for (auto& f : ahead) {
    f->Close();
  }
}

TEST(FileAhead, AFilesFirstDataReadHoldsItsWindowUntilItsOwnFetchGoesOut) {
  // A cold file's first data read at its tree's first entry, nothing seeded, predicts a window
  // of the next clusters; sent at once, they went out before the read's own miss on the one
  // connection the origin serves in order, and the application waited for them (issue 38).
  // They wait until the read's own fetch starts (or the read is served without one).
  // Clusters of 200 entries: the first one's baskets reach past what the metadata fetch holds,
  // so the first data read misses whenever the metadata fetch landed.
  Fixture fx(200);
  const std::vector<Unit> units = Units(fx.bytes, kBranches);
  ASSERT_GE(units.size(), 3u);
  auto f = fx.Open();
  OpenTree(*f);
  FileAhead& ahead = *f->read_ahead();
  ASSERT_TRUE(ahead.WaitDecided(10000));
  const uint64_t origin_bytes = fx.origin->bytes();
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<io::ReadRequest> requests;
  buffers.reserve(units[0].size());
  for (const fetch::Range& r : units[0]) {
    buffers.emplace_back(r.length);
    requests.push_back({r.offset, buffers.back(), {}});
  }
  ASSERT_TRUE(ahead.BeforeRead(requests));
  const FileAhead::Snapshot held = ahead.snapshot();
  EXPECT_EQ(held.level, FileAhead::kTopLevel - 1);
  EXPECT_GT(held.queued, 0u);
  EXPECT_EQ(held.in_flight + held.landed, 0u);
  // Nothing of the window went out, nor waits in the Prefetcher's queue.
  EXPECT_EQ(fx.origin->bytes(), origin_bytes);
  ASSERT_NE(fx.cache->prefetcher(), nullptr);
  EXPECT_EQ(fx.cache->prefetcher()->queued(), 0u);
  ahead.OwnFetchStarts();
  EXPECT_TRUE(ahead.WaitLanded(1, 10000));  // the window went out
  EXPECT_GT(fx.origin->bytes(), origin_bytes);
  ahead.AfterRead(requests, /*missed=*/false);
  f->Close();
}

TEST(FileAhead, AFileOpenedAndNeverReadCostsAtMostItsWindow) {
  // A file opened (its trees loaded and seeded) but closed unread: what it fetched ahead stays
  // within one window of clusters and is counted unused.
  Fixture fx(50, 1);
  const std::vector<Unit> units = Units(fx.bytes, kBranches);
  fx.Pass(units);
  const uint64_t read = fx.Get(Counter::kBytesFromOrigin);
  auto b = fx.Open(true, kSecondUrl);
  OpenTree(*b);
  const uint64_t cluster = Bytes(units) / units.size();
  ASSERT_TRUE(b->read_ahead()->WaitLanded(4 * cluster, 10000));
  const FileAhead::Snapshot s = b->read_ahead()->snapshot();
  b->Close();
  const uint64_t unused = fx.Get(Counter::kPrefetchUnusedBytes);
  EXPECT_GT(unused, 0u);
  // Within its window (at least kMinWindowReads clusters), plus one cluster of slack for
  // basket boundaries.
  EXPECT_GE(s.window, FileAhead::kMinWindowReads * cluster / 2);
  EXPECT_LE(unused, s.window + cluster);
  EXPECT_LE(fx.Get(Counter::kBytesFromOrigin) - read,
            unused + Prefetcher::kDefaultMetadataHead + Prefetcher::kDefaultMetadataTail);
}

TEST(FileAhead, BranchMemoryIsKeptPerScope) {
  // The site proxy scopes the memory by client host: a file another host opens is not seeded
  // with what this one read; one the same host opens is.
  Fixture fx(50, 1);
  const std::vector<Unit> units = Units(fx.bytes, kBranches);
  OpenOptions o;
  o.read_ahead = true;
  o.ahead_scope = "host-a";
  auto a = fx.cache->Open(kUrl, fx.origin, o).value();
  OpenTree(*a);
  ReadAll(*a, units, fx.bytes);
  a->Close();
  o.ahead_scope = "host-b";
  auto other = fx.cache->Open(kSecondUrl, fx.origin, o).value();
  OpenTree(*other);
  ASSERT_TRUE(other->read_ahead()->WaitDecided(10000));
  EXPECT_FALSE(other->read_ahead()->WaitLanded(1, 300));
  other->Close();
  // (A third file: the second one's metadata is held now, and a file that only hits loads
  // nothing.)
  o.ahead_scope = "host-a";
  auto same = fx.cache->Open("root://origin.example:1094//data/ahead-3.root", fx.origin, o).value();
  OpenTree(*same);
  EXPECT_TRUE(same->read_ahead()->WaitLanded(1, 10000));
  same->Close();
}

TEST(FileAhead, SequentialReadsFetchTheNextWindowOfAnyFile) {
  testing::TempDir dir;
  Config config = testing::CacheTestConfig(dir.path() + "/cache");
  auto cache = Cache::Create(config).value();
  const uint64_t size = 24 << 20;
  const auto bytes = testing::PseudoRandomBytes(size, 5);
  auto origin = std::make_shared<MemoryOrigin>(bytes, 1700000000, /*channels=*/2);
  origin->SetReadDelay(std::chrono::milliseconds(2));
  OpenOptions o;
  o.read_ahead = true;
  o.sequential_ahead = true;
  auto f = cache->Open("root://origin.example:1094//data/copy.bin", origin, o).value();
  // A copy: 1 MiB reads one after another; the reads with gaps (a vector read) do not count.
  constexpr uint64_t kRead = 1 << 20;
  for (uint64_t off = 0; off < size; off += kRead) {
    ReadUnit(*f, {{off, kRead}}, bytes);
  }
  f->Close();
  const uint64_t prefetched = cache->counters().Get(Counter::kPrefetchBytes);
  EXPECT_GE(prefetched, FileAhead::kSeqWindowMin);
  EXPECT_EQ(f->handle_counters().prefetch_bytes.load(), prefetched);
  // Nothing twice: the reads joined or hit what was fetched ahead.
  EXPECT_LE(cache->counters().Get(Counter::kBytesFromOrigin), size + (64u << 10));
  // Without the option (the client plug-in), a copy gets none.
  o.sequential_ahead = false;
  auto g = cache
               ->Open("root://origin.example:1094//data/copy-2.bin",
                      std::make_shared<MemoryOrigin>(bytes), o)
               .value();
  for (uint64_t off = 0; off < 8 * kRead; off += kRead) {
    ReadUnit(*g, {{off, kRead}}, bytes);
  }
  g->Close();
  EXPECT_EQ(cache->counters().Get(Counter::kPrefetchBytes), prefetched);
}

// Reads the host serves itself from held bytes (the site proxy's sendfile: FollowZeroCopy) are
// followed as reads that hit: in order through the held part, they fetch what follows it.
TEST(FileAhead, ReadsServedOutsideTheCacheAreFollowedToo) {
  testing::TempDir dir;
  Config config = testing::CacheTestConfig(dir.path() + "/cache");
  auto cache = Cache::Create(config).value();
  const uint64_t size = 16 << 20;
  const uint64_t held = 8 << 20;
  const auto bytes = testing::PseudoRandomBytes(size, 6);
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  OpenOptions o;
  o.read_ahead = true;
  o.sequential_ahead = true;
  const char* url = "root://origin.example:1094//data/sent.bin";
  constexpr uint64_t kRead = 1 << 20;
  auto fill = cache->Open(url, origin, o).value();
  for (uint64_t off = held; off > 0; off -= kRead) {  // backwards: no sequential run
    ReadUnit(*fill, {{off - kRead, kRead}}, bytes);
  }
  fill->Close();
  ASSERT_TRUE(cache->Flush());
  ASSERT_EQ(cache->counters().Get(Counter::kPrefetchBytes), 0u);
  auto f = cache->Open(url, origin, o).value();
  for (uint64_t off = 0; off < held; off += kRead) {
    f->FollowZeroCopy(off, kRead);
  }
  std::vector<uint8_t> buf(size - held);
  io::ReadRequest next{held, buf, {}};
  for (int i = 0; i < 20000 && !f->AllHeld({&next, 1}); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(f->AllHeld({&next, 1})) << "what follows the held part was fetched ahead";
  f->Close();
  EXPECT_GE(cache->counters().Get(Counter::kPrefetchBytes), size - held);
  EXPECT_EQ(cache->counters().Get(Counter::kBytesFromOrigin), size) << "nothing twice";
}

TEST(FileAhead, OffByOptionOrSetting) {
  Fixture fx(50, 1);
  EXPECT_EQ(fx.Open(/*ahead=*/false)->read_ahead(), nullptr);
  fx.config.readahead = false;
  fx.cache = Cache::Create(fx.config).value();
  EXPECT_EQ(fx.Open(/*ahead=*/true)->read_ahead(), nullptr);
}

TEST(LinkMeter, RoundTripAndDeliveryRate) {
  LinkMeter m;
  EXPECT_EQ(m.rtt_s(), 0.0);
  EXPECT_EQ(m.BandwidthDelay(), 0u);
  // 40 ms trips; 1 MB delivered per 10 ms of busy time: 100 MB/s, 4 MB in flight keeps it busy.
  m.AddSample(48'000'000, 10'000'000, 1'000'000);
  m.AddSample(40'000'000, 10'000'000, 1'000'000);
  m.AddSample(60'000'000, 10'000'000, 1'000'000);
  EXPECT_NEAR(m.rtt_s(), 0.040, 1e-9);
  EXPECT_NEAR(m.rate_bps(), 100e6, 1e3);
  EXPECT_NEAR(static_cast<double>(m.BandwidthDelay()), 4e6, 1e3);
  // Requests timed by Begin/End (on an injected clock, so the times are exact): the busy time
  // of overlapping requests counts once. Two requests leave together and end 20 and 30 ms
  // later: the link was busy 30 ms (not 50) for 1 MB.
  int64_t now = 1'000'000'000;
  LinkMeter live([&now] { return now; });
  const int64_t a = live.Begin();
  const int64_t b = live.Begin();
  now += 20'000'000;
  live.End(a, 500000);
  now += 10'000'000;
  live.End(b, 500000);
  EXPECT_NEAR(live.rtt_s(), 0.020, 1e-9);
  EXPECT_NEAR(live.rate_bps(), 1e6 / 0.030, 1e-3);
  EXPECT_EQ(live.requests(), 2u);
  // While a request is outstanding, its running busy time counts too.
  live.Begin();
  now += 10'000'000;
  EXPECT_NEAR(live.rate_bps(), 1e6 / 0.040, 1e-3);
}

TEST(LinkMeter, OneRequestAtATimeStillMeasuresTheLink) {
  // A reader with one 1.3 MB request per round trip (40 ms trip, 10 ms transfer: a 130 MB/s
  // link): busy-time rate 26 MB/s, which would hold the window at its own size. The transfer
  // time of the large requests shows the link.
  LinkMeter m;
  m.AddSample(40'000'000, 40'000'000, 4096);  // a small request: the trip
  for (int i = 0; i < 5; ++i) {
    m.AddSample(50'000'000, 50'000'000, 1'300'000);
  }
  EXPECT_NEAR(m.rate_bps(), 130e6, 1e3);
  EXPECT_NEAR(static_cast<double>(m.BandwidthDelay()), 5.2e6, 1e3);
  // Requests that took one trip (jitter, or smaller than the sample size) do not make the
  // rate unbounded: at most the sample over an eighth of the trip.
  LinkMeter j;
  j.AddSample(40'000'000, 40'000'000, 1'000'000);
  j.AddSample(40'000'000, 40'000'000, 1'000'000);
  EXPECT_NEAR(j.rate_bps(), 1e6 / 0.005, 1e3);
}

}  // namespace
}  // namespace ferry::readahead
