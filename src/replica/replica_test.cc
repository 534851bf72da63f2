// The replica tier over a MemoryOrigin holding real ROOT files: building, serving the virtual
// file, faults, layouts across rebuilds, invalidation; the manifest and trace formats; and the
// fragment log's compaction.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/fd.h"
#include "cache/cache.h"
#include "cache/entry_store.h"
#include "cache/lock_file.h"
#include "cache/testing/cached_source.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "cache/verify.h"
#include "io/local_source.h"
#include "replica/access_trace.h"
#include "replica/replica_build.h"
#include "replica/replica_manifest.h"
#include "replica/replica_testing.h"
#include "rootio/root_file.h"
#include "rootwrite/sample_tree.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::replica {
namespace {

using cache::AllocatedBytes;
using cache::Cache;
using cache::CachedFile;
using cache::CachedSource;
using cache::Config;
using cache::Counter;
using cache::EntryKey;
using cache::EntryPaths;
using cache::LoadIndex;
using cache::MemoryOrigin;
using cache::NormalizeUrl;
using cache::PathsFor;
using cache::VerifyEntry;

constexpr const char* kUrl = "root://origin.example:1094//data/sample.root";

Config TestConfig(const std::string& dir) {
  return ServingConfig(dir);
}

// The sample tree with 8 clusters of 128 entries, one basket per branch and cluster.
std::vector<uint8_t> SampleFile(const testing::TempDir& dir, codec::Setting setting) {
  rootwrite::TreeOptions to;
  to.auto_flush = 128;
  to.basket_size = 32000;
  const std::string path = dir.File("sample.root");
  Status st = rootwrite::sample::Write(path, rootwrite::sample::Fixed(setting), to, false);
  EXPECT_TRUE(st) << st.error().ToString();
  return testing::ReadWholeFile(path);
}

// Every readable leaf of every tree, by "tree/leaf".
std::map<std::string, rootio::Column> Values(io::ByteSource& src) {
  std::map<std::string, rootio::Column> out;
  auto f = rootio::RootFile::Open(src);
  EXPECT_TRUE(f.has_value()) << f.error().ToString();
  if (!f) {
    return out;
  }
  for (const std::string& p : (*f)->TreePaths().value_or(std::vector<std::string>{})) {
    auto t = (*f)->OpenTree(p);
    EXPECT_TRUE(t.has_value()) << t.error().ToString();
    for (size_t li = 0; t && li < (*t)->info().leaves.size(); ++li) {
      if ((*t)->CheckReadable(static_cast<int32_t>(li))) {
        auto c = (*t)->ReadLeaf(static_cast<int32_t>(li), (*t)->All());
        EXPECT_TRUE(c.has_value()) << c.error().ToString();
        if (c) {
          out[p + "/" + (*t)->info().leaves[li].name] = std::move(*c);
        }
      }
    }
  }
  return out;
}

void ExpectSame(const std::map<std::string, rootio::Column>& a,
                const std::map<std::string, rootio::Column>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, col] : a) {
    auto it = b.find(name);
    ASSERT_NE(it, b.end()) << name;
    EXPECT_EQ(col.offsets, it->second.offsets) << name;
    EXPECT_TRUE(col.bytes == it->second.bytes) << "values of " << name << " differ";
  }
}

// What an analysis does: per cluster, one vector read of the baskets of `branches` (the way
// ROOT's TTreeCache reads). Returns the number of vector reads.
size_t ClusterPass(CachedFile& f, const std::vector<std::string>& branches) {
  CachedSource src(f);
  auto file = rootio::RootFile::Open(src);
  EXPECT_TRUE(file.has_value());
  auto tree = (*file)->OpenTree("Events");
  EXPECT_TRUE(tree.has_value());
  const rootio::TreeInfo& info = (*tree)->info();
  size_t reads = 0;
  for (const rootio::EntryRange& cluster : info.Clusters()) {
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<io::ReadRequest> requests;
    for (const std::string& name : branches) {
      const int32_t b = info.FindBranch(name);
      if (b < 0) {
        ADD_FAILURE() << "no branch " << name;
        continue;
      }
      for (size_t k : (*tree)->BasketsOverlapping(b, cluster)) {
        const rootio::BasketRef& ref = info.branches[static_cast<size_t>(b)].baskets[k];
        if (ref.seek != 0) {
          buffers.emplace_back(ref.bytes);
          requests.push_back({ref.seek, buffers.back(), {}});
        }
      }
    }
    EXPECT_TRUE(f.ReadV(requests));
    reads += 1;
  }
  return reads;
}

uint64_t Count(Cache& c, Counter k) {
  return c.counters().Get(k);
}

struct Fixture {
  testing::TempDir dir;
  Config config = TestConfig(dir.path() + "/cache");
  std::vector<uint8_t> bytes;
  std::shared_ptr<MemoryOrigin> origin;
  std::shared_ptr<Cache> cache;

  explicit Fixture(codec::Setting setting = {codec::Algorithm::kZlib, 1}) {
    bytes = SampleFile(dir, setting);
    origin = std::make_shared<MemoryOrigin>(bytes);
    cache = Cache::Create(config).value();
  }
  std::unique_ptr<CachedFile> Open() {
    auto f = cache->Open(kUrl, origin);
    EXPECT_TRUE(f.has_value()) << f.error().ToString();
    return f ? std::move(*f) : nullptr;
  }
  ReplicaBuildReport Build() {
    EXPECT_TRUE(cache->Flush());
    auto r = BuildReplica(config, KeyOf(kUrl), {});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.value_or(ReplicaBuildReport{});
  }
  std::map<std::string, rootio::Column> Original() {
    io::MemorySource src(bytes);
    return Values(src);
  }
};

TEST(Replica, ServesTheOriginalValuesWithOneReadPerCluster) {
  Fixture fx;
  const std::vector<std::string> hot = {"nJet", "Jet_pt", "d", "i32"};
  {
    auto f = fx.Open();
    ASSERT_FALSE(f->virtual_file());
    EXPECT_EQ(ClusterPass(*f, hot), 8u);
  }
  ASSERT_TRUE(fx.cache->Flush());
  const uint64_t held_before = LoadIndex(PathsFor(fx.config.dir, KeyOf(kUrl)).idx())->held_bytes();
  ReplicaBuildReport r = fx.Build();
  ASSERT_EQ(r.state, ReplicaState::kBuilt) << r.reason;
  EXPECT_TRUE(r.published);
  EXPECT_EQ(r.baskets, 4u * 8u);  // every basket of the four branches, no other
  EXPECT_EQ(r.hot_branches.size(), 4u);
  EXPECT_EQ(r.missing_baskets, 0u);
  EXPECT_GT(r.released_bytes, 0u);
  const uint64_t held_after = LoadIndex(PathsFor(fx.config.dir, KeyOf(kUrl)).idx())->held_bytes();
  EXPECT_LE(held_after + r.released_bytes, held_before);

  auto f = fx.Open();
  ASSERT_TRUE(f->virtual_file());
  EXPECT_EQ(f->size(), r.virtual_bytes);
  EXPECT_EQ(f->origin_size(), fx.bytes.size());
  // The warm pass: one replica read per cluster and no origin contact.
  const uint64_t origin_reads = fx.origin->read_calls();
  const uint64_t replica_reads = Count(*fx.cache, Counter::kReplicaReads);
  EXPECT_EQ(ClusterPass(*f, hot), 8u);
  EXPECT_EQ(Count(*fx.cache, Counter::kReplicaReads) - replica_reads, 8u);
  EXPECT_EQ(fx.origin->read_calls(), origin_reads);
  // Every value of the virtual file is the original's (branches not hot come from the
  // origin, at their original places).
  CachedSource src(*f);
  ExpectSame(fx.Original(), Values(src));
  EXPECT_EQ(Count(*fx.cache, Counter::kReplicaFaults), 0u);
}

TEST(Replica, LzmaOriginalsGetAFasterCodecWithinTheBudget) {
  Fixture fx({codec::Algorithm::kLzma, 9});
  {
    auto f = fx.Open();
    ClusterPass(*f, {"nJet", "Jet_pt", "d", "event"});
  }
  ReplicaBuildReport r = fx.Build();
  ASSERT_EQ(r.state, ReplicaState::kBuilt) << r.reason;
  EXPECT_NE(r.setting.algorithm, codec::Algorithm::kLzma);
  EXPECT_FALSE(r.rates.empty());
  auto f = fx.Open();
  ASSERT_TRUE(f->virtual_file());
  CachedSource src(*f);
  ExpectSame(fx.Original(), Values(src));
}

TEST(Replica, AFlippedBitIsCaughtAndServedCorrectly) {
  Fixture fx;
  {
    auto f = fx.Open();
    ClusterPass(*f, {"Jet_pt", "d"});
  }
  ReplicaBuildReport r = fx.Build();
  ASSERT_EQ(r.state, ReplicaState::kBuilt);
  const std::string data = PathsFor(fx.config.dir, KeyOf(kUrl)).replica_data(r.generation);
  {
    Fd fd = Fd::Open(data, O_RDWR).value();
    uint8_t b = 0;
    ASSERT_TRUE(PreadFull(fd.get(), &b, 1, 200));
    b ^= 0x10;
    ASSERT_TRUE(PwriteFull(fd.get(), &b, 1, 200));
  }
  auto f = fx.Open();
  ASSERT_TRUE(f->virtual_file());
  CachedSource src(*f);
  ExpectSame(fx.Original(), Values(src));
  EXPECT_GE(Count(*fx.cache, Counter::kReplicaFaults), 1u);
}

TEST(Replica, AHandleKeepsItsLayoutAcrossARebuild) {
  Fixture fx;
  {
    auto f = fx.Open();
    ClusterPass(*f, {"Jet_pt"});
  }
  ReplicaBuildReport first = fx.Build();
  ASSERT_EQ(first.state, ReplicaState::kBuilt);
  auto old_layout = fx.Open();
  ASSERT_TRUE(old_layout->virtual_file());
  EXPECT_EQ(old_layout->replica_generation(), first.generation);
  {
    // A later pass reads more branches: misses, recorded, then the replica grows.
    auto f = fx.Open();
    ClusterPass(*f, {"Jet_pt", "d", "i32"});
  }
  ReplicaBuildReport second = fx.Build();
  ASSERT_EQ(second.state, ReplicaState::kBuilt) << second.reason;
  EXPECT_EQ(second.generation, first.generation + 1);
  EXPECT_EQ(second.baskets, 3u * 8u);
  EXPECT_EQ(second.new_baskets, 2u * 8u);  // Jet_pt's came from the first replica as they were
  // The first generation's data file is gone, yet the old handle reads its own layout.
  struct stat st = {};
  EXPECT_NE(
      ::stat(PathsFor(fx.config.dir, KeyOf(kUrl)).replica_data(first.generation).c_str(), &st), 0);
  CachedSource old_src(*old_layout);
  ExpectSame(fx.Original(), Values(old_src));
  auto fresh = fx.Open();
  EXPECT_EQ(fresh->replica_generation(), second.generation);
  CachedSource new_src(*fresh);
  ExpectSame(fx.Original(), Values(new_src));
}

// A complete build empties the access trace (the replica holds what it asked for). A pass on
// that replica is no first pass: it records nothing, so it asks for no build again.
TEST(Replica, APassOnACompleteReplicaRecordsNoTrace) {
  Fixture fx;
  {
    auto f = fx.Open();
    ClusterPass(*f, {"Jet_pt"});
  }
  ASSERT_EQ(fx.Build().state, ReplicaState::kBuilt);
  const std::string trace = PathsFor(fx.config.dir, KeyOf(kUrl)).trace();
  ASSERT_EQ(testing::ReadWholeFile(trace).size(), 0u);
  fx.cache = Cache::Create(fx.config).value();  // a new process
  {
    auto f = fx.Open();
    ASSERT_TRUE(f->virtual_file());
    ClusterPass(*f, {"Jet_pt"});
  }
  ASSERT_TRUE(fx.cache->Flush());
  EXPECT_EQ(testing::ReadWholeFile(trace).size(), 0u);
}

TEST(Replica, AChangedOriginFileInvalidatesTheReplica) {
  Fixture fx;
  fx.config.revalidate_s = 0;  // check the origin at every open
  fx.cache = Cache::Create(fx.config).value();
  {
    auto f = fx.Open();
    ClusterPass(*f, {"Jet_pt"});
  }
  ASSERT_EQ(fx.Build().state, ReplicaState::kBuilt);
  fx.cache.reset();  // a new process
  std::vector<uint8_t> changed = fx.bytes;
  changed.push_back(0);  // a new version of the file (size and mtime differ)
  fx.origin->Replace(changed, 1800000000);
  fx.cache = Cache::Create(fx.config).value();
  auto f = fx.Open();
  EXPECT_FALSE(f->virtual_file());
  EXPECT_EQ(f->size(), changed.size());
  auto status = ReplicaStatusOf(PathsFor(fx.config.dir, KeyOf(kUrl)));
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(status->state, ReplicaState::kBuilt);
}

// The same drop for an RNTuple file's replica: what is checked (the manifest's epoch, size and
// mtime against the origin's) does not depend on the format.
TEST(Replica, AChangedOriginRntupleInvalidatesTheReplica) {
  if (testing::RntupleDataDir().empty()) {
    GTEST_SKIP() << "data/rntuple not present";
  }
  testing::TempDir dir;
  Config config = TestConfig(dir.path() + "/cache");
  config.revalidate_s = 0;
  const std::string url = "root://origin.example:1094//data/muons.root";
  const std::vector<uint8_t> bytes = testing::ReadWholeFile(
      testing::RntupleDataDir() + "/Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root");
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  auto cache = Cache::Create(config).value();
  {
    auto f = cache->Open(url, origin).value();
    std::vector<uint8_t> whole(bytes.size());
    ASSERT_TRUE(f->Read(0, whole));  // every page read whole: all of them hot
  }
  ASSERT_TRUE(cache->Flush());
  auto built = BuildReplica(config, KeyOf(url), {});
  ASSERT_TRUE(built.has_value()) << built.error().ToString();
  ASSERT_EQ(built->state, ReplicaState::kBuilt) << built->reason;
  cache = Cache::Create(config).value();  // a new process
  EXPECT_TRUE(cache->Open(url, origin).value()->virtual_file());
  cache.reset();
  std::vector<uint8_t> changed = bytes;
  changed.push_back(0);
  origin->Replace(changed, 1800000000);
  cache = Cache::Create(config).value();
  auto f = cache->Open(url, origin).value();
  EXPECT_FALSE(f->virtual_file());
  EXPECT_EQ(f->size(), changed.size());
  auto status = ReplicaStatusOf(PathsFor(config.dir, KeyOf(url)));
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(status->state, ReplicaState::kBuilt);
}

TEST(Replica, AFileThatIsNotRootIsLeftAlone) {
  testing::TempDir dir;
  Config config = TestConfig(dir.path() + "/cache");
  auto cache = Cache::Create(config).value();
  auto origin = std::make_shared<MemoryOrigin>(testing::PseudoRandomBytes(100000, 3));
  {
    auto f = cache->Open(kUrl, origin).value();
    std::vector<uint8_t> buf(5000);
    ASSERT_TRUE(f->Read(0, buf));
  }
  ASSERT_TRUE(cache->Flush());
  auto r = BuildReplica(config, KeyOf(kUrl), {});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->state, ReplicaState::kUnsupported);
  EXPECT_NE(r->reason.find("not a ROOT file"), std::string::npos) << r->reason;
  auto status = ReplicaStatusOf(PathsFor(config.dir, KeyOf(kUrl)));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->state, ReplicaState::kUnsupported);
}

// A background build that holds the file when an explicit build of it starts — waiting in its
// pause for a pass to end (`pause_call` 1, where it waits before the file) or mid-build (a later
// pause, whose own wait does not look at give_up) — steps aside at that pause: the explicit
// build returns with the file built, the background one with "yielded", and the replica serves.
void ExpectExplicitBuildTakesOver(int pause_call, bool waits_for_give_up) {
  Fixture fx;
  {
    auto f = fx.Open();
    ClusterPass(*f, {"nJet", "Jet_pt", "d", "i32"});
  }
  ASSERT_TRUE(fx.cache->Flush());
  const std::string key = KeyOf(kUrl);
  auto probe = cache::LockFile::Open(PathsFor(fx.config.dir, key).lock());
  ASSERT_TRUE(probe.has_value());
  std::atomic<bool> holding{false};
  int calls = 0;
  ReplicaBuildOptions background;
  background.yield = true;
  background.pause = [&](const std::function<bool()>& give_up) {
    if (++calls != pause_call) {
      return;
    }
    holding = true;
    // Bounded: the explicit build below asks within moments.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline
           && !(waits_for_give_up ? give_up() : probe->HeldElsewhere(cache::kBuildWantedByte))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  Result<ReplicaBuildReport> yielded = ReplicaBuildReport{};
  std::thread builder([&] { yielded = BuildReplica(fx.config, key, background); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!holding && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(holding);
  auto explicit_build = BuildReplica(fx.config, key, {});
  builder.join();
  ASSERT_TRUE(explicit_build.has_value()) << explicit_build.error().ToString();
  EXPECT_EQ(explicit_build->state, ReplicaState::kBuilt) << explicit_build->reason;
  EXPECT_TRUE(explicit_build->published);
  ASSERT_TRUE(yielded.has_value()) << yielded.error().ToString();
  EXPECT_EQ(yielded->state, ReplicaState::kBuilding);
  EXPECT_EQ(yielded->reason, "yielded to an explicit build");
  EXPECT_EQ(ReplicaStatusOf(PathsFor(fx.config.dir, key))->state, ReplicaState::kBuilt);
  auto f = fx.Open();
  ASSERT_TRUE(f->virtual_file());
  CachedSource src(*f);
  ExpectSame(fx.Original(), Values(src));
}

TEST(Replica, AnExplicitBuildTakesOverFromABackgroundBuildPausedByAPass) {
  ExpectExplicitBuildTakesOver(1, /*waits_for_give_up=*/true);
}

TEST(Replica, AnExplicitBuildTakesOverFromABackgroundBuildMidBuild) {
  // The 12th pause is among the codec sample's steps or the baskets being placed.
  ExpectExplicitBuildTakesOver(12, /*waits_for_give_up=*/false);
}

TEST(Replica, ABackgroundBuildSkipsAFileAnExplicitBuildHolds) {
  Fixture fx;
  {
    auto f = fx.Open();
    ClusterPass(*f, {"nJet", "Jet_pt"});
  }
  ASSERT_TRUE(fx.cache->Flush());
  const std::string key = KeyOf(kUrl);
  auto held = cache::LockFile::Open(PathsFor(fx.config.dir, key).lock());
  ASSERT_TRUE(held.has_value());
  ASSERT_TRUE(held->Lock(cache::kBuildLockByte, /*exclusive=*/true, 0));
  ReplicaBuildOptions background;
  background.yield = true;
  auto r = BuildReplica(fx.config, key, background);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->state, ReplicaState::kBuilding);
  EXPECT_EQ(r->reason, "another process is building it");
}

TEST(ReplicaManifest, RoundTripsAndRejectsDamage) {
  ReplicaManifest m;
  m.url = "root://h:1094/f.root";
  m.epoch = 7;
  m.origin_size = 1000;
  m.origin_mtime = 5;
  m.generation = 2;
  m.baskets_begin = 1200;
  m.data_bytes = 300;
  m.virtual_size = 1500;
  m.setting = {codec::Algorithm::kZstd, 3};
  m.SetLibraries();
  m.patches.push_back({12, {1, 2, 3, 4}});
  m.records.push_back({1000, 200, std::vector<uint8_t>(150, 9)});
  m.extents.push_back({1200, 100, 0xabc, 400, 120, 0, 3, 0});
  m.extents.push_back({1300, 200, 0xdef, 600, 250, 0, 3, 1});
  m.trees.emplace_back("Events");
  m.branches.push_back({0, "Jet_pt"});
  m.rates.push_back({{codec::Algorithm::kZstd, 3}, 900000000, 400000});
  std::vector<uint8_t> bytes;
  m.Encode(bytes);
  auto back = ReplicaManifest::Decode(bytes);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->url, m.url);
  EXPECT_EQ(back->extents.size(), 2u);
  EXPECT_EQ(back->extents[1].original_offset, 600u);
  EXPECT_EQ(back->records[0].bytes, m.records[0].bytes);
  EXPECT_EQ(back->branches[0].name, "Jet_pt");
  EXPECT_EQ(back->rates[0].decode_bytes_per_s, 900000000u);
  EXPECT_EQ(back->ExtentAt(1250), 0);
  EXPECT_EQ(back->ExtentAt(1499), 1);
  EXPECT_EQ(back->ExtentAt(1500), -1);
  for (size_t i = 0; i < bytes.size(); i += 7) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0x40;
    EXPECT_FALSE(ReplicaManifest::Decode(bad).has_value()) << "byte " << i;
  }
  EXPECT_FALSE(ReplicaManifest::Decode(std::span(bytes).first(bytes.size() - 1)).has_value());
  // Inconsistent content is refused before it is written.
  ReplicaManifest gap = m;
  gap.extents[1].offset += 1;
  EXPECT_FALSE(gap.Validate().has_value());
}

TEST(AccessTrace, KeepsTheRecordsBeforeATornTail) {
  std::vector<uint8_t> bytes;
  std::vector<TraceRange> a = {{100, 50}, {0, 0}, {300, 20}};
  EncodeTraceRecord(0, a, bytes);
  std::vector<TraceRange> many(kTraceMaxRanges + 5, TraceRange{1, 1});
  EncodeTraceRecord(4, many, bytes);
  const size_t whole = bytes.size();
  EncodeTraceRecord(5, a, bytes);
  bytes.erase(bytes.end() - 3, bytes.end());  // the last record torn by a crash
  size_t valid = 0;
  auto records = DecodeTrace(bytes, &valid);
  ASSERT_EQ(records.size(), 3u);  // a, then `many` cut into two records
  EXPECT_EQ(valid, whole);
  EXPECT_EQ(records[0].ranges.size(), 2u);  // the empty range is not recorded
  EXPECT_EQ(records[0].ranges[1].offset, 300u);
  EXPECT_EQ(records[1].generation, 4u);
  EXPECT_EQ(records[1].ranges.size() + records[2].ranges.size(), kTraceMaxRanges + 5);
  bytes[20] ^= 1;  // a damaged first record ends the trace there
  EXPECT_TRUE(DecodeTrace(bytes).empty());
}

// Random partial-page reads grow fragments, each growth appending anew: without compaction
// the fragment log piles up garbage (1.2-1.45x the held bytes was measured).
TEST(Compaction, AnEntryStaysWithinItsHeldBytes) {
  testing::TempDir dir;
  Config config = TestConfig(dir.path() + "/cache");
  const std::vector<uint8_t> bytes = testing::PseudoRandomBytes(24 << 20, 5);
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  std::mt19937_64 rng(11);
  for (int pass = 0; pass < 20; ++pass) {
    auto cache = Cache::Create(config).value();
    auto f = cache->Open(kUrl, origin).value();
    std::vector<io::ReadRequest> reqs;
    std::vector<std::vector<uint8_t>> bufs;
    for (int i = 0; i < 600; ++i) {
      const uint64_t off = rng() % (bytes.size() - 5000);
      bufs.emplace_back(100 + rng() % 1500);
      reqs.push_back({off, bufs.back(), {}});
    }
    std::sort(reqs.begin(), reqs.end(),
              [](const auto& x, const auto& y) { return x.offset < y.offset; });
    ASSERT_TRUE(f->ReadV(reqs));
    for (const io::ReadRequest& r : reqs) {
      ASSERT_EQ(0, std::memcmp(r.dest.data(), bytes.data() + r.offset, r.dest.size()));
    }
    f->Close();
    ASSERT_TRUE(cache->Flush());
  }
  const EntryPaths paths = PathsFor(config.dir, KeyOf(kUrl));
  // What the layout holds: a fragment in the data file takes its page's block there
  // (docs/format/page-store.md, "Fragments in the data file"); garbage stays within 5% of that.
  auto index = LoadIndex(paths.idx());
  ASSERT_TRUE(index);
  uint64_t held = index->full_pages() * index->page_size();
  for (const auto& [page, frag] : index->fragments()) {
    held += frag.in_data ? index->page_size() : frag.length();
  }
  const uint64_t disk =
      AllocatedBytes(paths.idx()) + AllocatedBytes(paths.data()) + AllocatedBytes(paths.frag());
  EXPECT_LE(static_cast<double>(disk), 1.05 * static_cast<double>(held))
      << "disk " << disk << " held " << held << " bytes held " << index->held_bytes();
  auto v = VerifyEntry(paths, false, 2000, nullptr, Hooks().get());
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->pages_bad + v->fragments_bad, 0u);
}

}  // namespace
}  // namespace ferry::replica
