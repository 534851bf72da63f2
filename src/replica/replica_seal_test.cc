// Sealed replicas (replica_seal.h, docs/format/replica.md "Sealed replicas"): an encrypted cache
// builds stage-1 and stage-2 replicas that read back to the original's values and verify; no
// 16-byte run of the file (or of its virtual file) lies in clear anywhere in the cache directory;
// an extent moved, of another build of the generation, another entry's or flipped, and a manifest
// flipped or swapped, are detected, counted and served right; a wrong or missing key serves the
// original bytes without the replica and says why; the master key rotated while a handle reads
// the virtual file leaves every byte right and the replica in use, and the old key locked out.
#include "replica/replica_seal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/fd.h"
#include "cache/cache.h"
#include "cache/entry_store.h"
#include "cache/page_seal.h"
#include "cache/rekey.h"
#include "cache/testing/cached_source.h"
#include "cache/testing/memory_origin.h"
#include "cache/verify.h"
#include "io/local_source.h"
#include "replica/replica_build.h"
#include "replica/replica_testing.h"
#include "replica/replica_view.h"
#include "rootwrite/sample_tree.h"
#include "testing/testing.h"

namespace ferry::replica {
namespace {

using cache::Cache;
using cache::CachedFile;
using cache::CachedSource;
using cache::Config;
using cache::Counter;
using cache::MasterKey;
using cache::MemoryOrigin;
using cache::PathsFor;

constexpr const char* kUrl = "root://origin.example:1094//data/sealed.root";
constexpr const char* kTwinUrl = "root://origin.example:1094//data/twin.root";

std::shared_ptr<const MasterKey> KeyOf(uint8_t fill) {
  cache::KeyBytes k{};
  k.fill(fill);
  return std::make_shared<const MasterKey>(MasterKey::FromBytes(k));
}

struct Sealed {
  testing::TempDir dir;
  std::vector<uint8_t> bytes = SampleTreeBytes(dir);
  std::shared_ptr<MemoryOrigin> origin = std::make_shared<MemoryOrigin>(bytes);
  Config config = Keyed(KeyOf(1));
  std::shared_ptr<Cache> cache = Cache::Create(config).value();

  Config Keyed(std::shared_ptr<const MasterKey> key) const {
    Config c = ServingConfig(dir.path() + "/cache");
    c.revalidate_s = 0;
    c.master_key = std::move(key);
    return c;
  }
  std::unique_ptr<CachedFile> Open(const char* url = kUrl) const {
    return cache->Open(url, origin).value();
  }
  void Pass(const char* url = kUrl) const {
    auto f = Open(url);
    std::vector<uint8_t> whole(bytes.size());
    ASSERT_TRUE(f->Read(0, whole));
  }
  ReplicaBuildReport Build(ReplicaStage stage, const char* url = kUrl) const {
    EXPECT_TRUE(cache->Flush());
    ReplicaBuildOptions options;
    options.stage = stage;
    auto r = BuildReplica(config, replica::KeyOf(url), options);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.value_or(ReplicaBuildReport{});
  }
  std::map<std::string, std::string> Original() const {
    io::MemorySource src(bytes);
    return Values(src);
  }
  // The values read through a new handle, which must (or must not) serve a virtual file.
  std::map<std::string, std::string> Served(bool replica, const char* url = kUrl) const {
    auto f = Open(url);
    EXPECT_EQ(f->virtual_file(), replica);
    CachedSource src(*f);
    return Values(src);
  }
  uint64_t Faults() const { return cache->counters().Get(Counter::kReplicaFaults); }
  // The replica's manifest, opened with the entry's data key (unwrapped as the cache does).
  ReplicaManifest Manifest(const char* url = kUrl) const {
    const cache::IndexInfo info = cache::LoadIndex(Paths(url).idx())->info();
    cache::KeyBytes data_key = config.master_key->Unwrap(info.wrapped_key).value();
    const cache::PageSealer entry(data_key, std::strtoull(replica::KeyOf(url).c_str(), nullptr, 16),
                                  info.epoch);
    cache::WipeKey(data_key);
    return LoadManifest(Paths(url), &entry).value();
  }
  cache::EntryPaths Paths(const char* url = kUrl) const {
    return PathsFor(config.dir, replica::KeyOf(url));
  }
};

std::vector<uint8_t> ReadFile(const std::string& path) {
  return testing::ReadWholeFile(path);
}

// Replaces `path` by `bytes` (a new inode: the cache sees the manifest change).
void Replace(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".test";
  {
    Fd fd = Fd::Open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600).value();
    ASSERT_TRUE(PwriteFull(fd.get(), bytes.data(), bytes.size(), 0));
  }
  ASSERT_EQ(::rename(tmp.c_str(), path.c_str()), 0);
}

// A manifest's CRCs recomputed, so that only the seal can tell a change.
void RefitCrcs(std::vector<uint8_t>& m) {
  StoreLE<uint32_t>(m.data() + 156, crc32c::Value(m.data(), 156));
  StoreLE<uint32_t>(m.data() + m.size() - 8, crc32c::Value(m.data(), m.size() - 8));
}

// The 16-byte runs of `content` that say something: 8 distinct byte values or more (a run of
// small integers and zeros, as any bookkeeping holds, is not the file's).
void AddRuns(const std::vector<uint8_t>& content, std::unordered_set<std::string_view>& runs) {
  for (size_t i = 0; i + 16 <= content.size(); ++i) {
    const std::set<uint8_t> distinct(content.begin() + static_cast<long>(i),
                                     content.begin() + static_cast<long>(i + 16));
    if (distinct.size() >= 8) {
      runs.insert({reinterpret_cast<const char*>(content.data() + i), 16});
    }
  }
}

// The files below `dir` that hold one of `runs`.
std::vector<std::string> FilesWithRuns(const std::string& dir,
                                       const std::unordered_set<std::string_view>& runs) {
  std::vector<std::string> hits;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) {
      continue;
    }
    const std::vector<uint8_t> body = ReadFile(e.path().string());
    for (size_t i = 0; i + 16 <= body.size(); ++i) {
      if (runs.count({reinterpret_cast<const char*>(body.data() + i), 16}) != 0) {
        hits.push_back(e.path().filename().string());
        break;
      }
    }
  }
  return hits;
}

TEST(SealedReplica, BothStagesReadBackAndVerify) {
  Sealed s;
  s.Pass();
  const ReplicaBuildReport one = s.Build(ReplicaStage::kRelocate);
  ASSERT_EQ(one.state, ReplicaState::kBuilt) << one.reason;
  EXPECT_EQ(one.stage, 1);
  EXPECT_FALSE(LoadManifest(s.Paths()).has_value());  // sealed: no key, no manifest
  EXPECT_EQ(s.Served(true), s.Original());
  const ReplicaBuildReport two = s.Build(ReplicaStage::kReencode);
  ASSERT_EQ(two.state, ReplicaState::kBuilt) << two.reason;
  EXPECT_EQ(two.stage, 2);
  EXPECT_EQ(two.new_baskets, one.baskets);  // every unit re-encoded from stage 1's sealed copy
  EXPECT_EQ(s.Served(true), s.Original());
  EXPECT_EQ(s.Faults(), 0u);
  auto v = cache::VerifyEntry(s.Paths(), false, 2000, s.config.master_key.get(), Hooks().get());
  ASSERT_TRUE(v.has_value()) << v.error().ToString();
  EXPECT_FALSE(v->bad()) << v->replica_error;
  EXPECT_EQ(v->replica_extents_ok, two.baskets);
  auto status = ReplicaStatusOf(s.Paths(), s.config.master_key.get());
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->stage, 2);
  EXPECT_EQ(status->baskets, two.baskets);
  EXPECT_FALSE(status->hot_branches.empty());
}

TEST(SealedReplica, NoRunOfTheFileOnDisk) {
  Sealed s;
  s.Pass();
  ASSERT_EQ(s.Build(ReplicaStage::kRelocate).stage, 1);
  std::vector<uint8_t> stage_one;
  {
    auto f = s.Open();
    stage_one.resize(f->size());
    ASSERT_TRUE(f->Read(0, stage_one));
  }
  ASSERT_EQ(s.Build(ReplicaStage::kReencode).stage, 2);
  std::vector<uint8_t> stage_two;
  {
    auto f = s.Open();
    stage_two.resize(f->size());
    ASSERT_TRUE(f->Read(0, stage_two));
  }
  ASSERT_TRUE(s.cache->Flush());
  // The original, and both virtual files (rewritten records, re-encoded baskets, names).
  std::unordered_set<std::string_view> runs;
  AddRuns(s.bytes, runs);
  AddRuns(stage_one, runs);
  AddRuns(stage_two, runs);
  EXPECT_EQ(FilesWithRuns(s.config.dir, runs), std::vector<std::string>{});
  // The search sees: a plain cache's replica files hold such runs.
  Sealed plain;
  plain.config.master_key = nullptr;
  plain.cache = Cache::Create(plain.config).value();
  plain.Pass();
  ASSERT_EQ(plain.Build(ReplicaStage::kReencode).stage, 2);
  std::vector<std::string> hits = FilesWithRuns(plain.config.dir, runs);
  const std::string key = replica::KeyOf(kUrl);
  for (const std::string& name : {key + ".rpm", key + ".rpd.1"}) {
    EXPECT_NE(std::find(hits.begin(), hits.end(), name), hits.end()) << name;
  }
}

// Flips bit 4 of the byte at `offset` of `path` in place.
void FlipBit(const std::string& path, uint64_t offset) {
  Fd fd = Fd::Open(path, O_RDWR).value();
  uint8_t b = 0;
  ASSERT_TRUE(PreadFull(fd.get(), &b, 1, offset));
  b ^= 0x10;
  ASSERT_TRUE(PwriteFull(fd.get(), &b, 1, offset));
}

// A vector read that tiles a run of sealed extents is read and opened straight in the caller's
// buffers, each extent cut across several of them inside a 16-byte block: every byte right. A
// flipped bit there fails the extent, which is rebuilt into the same buffers and counted.
TEST(SealedReplica, ARunTilingExtentsOpensInTheCallersBuffers) {
  Sealed s;
  s.Pass();
  const ReplicaBuildReport r = s.Build(ReplicaStage::kReencode);
  ASSERT_EQ(r.state, ReplicaState::kBuilt) << r.reason;
  const ReplicaManifest m = s.Manifest();
  ASSERT_GE(m.extents.size(), 3u);
  auto f = s.Open();
  ASSERT_TRUE(f->virtual_file());
  std::vector<uint8_t> want(f->size());
  ASSERT_TRUE(f->Read(0, want));
  io::MemorySource whole(want);
  ASSERT_EQ(Values(whole), s.Original());
  // Each extent in three requests: 7 bytes, up to its middle, the rest.
  std::vector<std::pair<uint64_t, uint64_t>> cuts;
  for (const ReplicaExtent& x : m.extents) {
    ASSERT_GT(x.bytes, 40u);
    const uint64_t mid = x.offset + x.bytes / 2 + 3;
    cuts.insert(cuts.end(),
                {{x.offset, 7}, {x.offset + 7, mid - x.offset - 7}, {mid, x.end() - mid}});
  }
  auto read_tiled = [&] {
    std::vector<uint8_t> got(want.size(), 0xaa);
    std::vector<io::ReadRequest> reqs;
    reqs.reserve(cuts.size());
    for (const auto& [at, n] : cuts) {
      reqs.push_back({at, std::span<uint8_t>(got).subspan(at, n), OkStatus()});
    }
    EXPECT_TRUE(f->ReadV(reqs));
    return std::equal(got.begin() + static_cast<long>(m.baskets_begin), got.end(),
                      want.begin() + static_cast<long>(m.baskets_begin));
  };
  EXPECT_TRUE(read_tiled());
  EXPECT_EQ(s.Faults(), 0u);
  const ReplicaExtent& x = m.extents[1];
  FlipBit(s.Paths().replica_data(m.generation), x.offset - m.baskets_begin + x.bytes / 2);
  EXPECT_TRUE(read_tiled());
  EXPECT_EQ(s.Faults(), 1u);
}

TEST(SealedReplica, AFlippedOrMovedExtentIsRebuiltAndCounted) {
  Sealed s;
  s.Pass();
  const ReplicaBuildReport r = s.Build(ReplicaStage::kReencode);
  ASSERT_EQ(r.state, ReplicaState::kBuilt) << r.reason;
  ASSERT_GE(r.baskets, 3u);
  const std::string data = s.Paths().replica_data(r.generation);
  FlipBit(data, 100);
  EXPECT_EQ(s.Served(true), s.Original());
  const uint64_t after_flip = s.Faults();
  EXPECT_GE(after_flip, 1u);
  auto v = cache::VerifyEntry(s.Paths(), false, 2000, s.config.master_key.get(), Hooks().get());
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->replica_bad);
  EXPECT_EQ(v->replica_extents_bad, 1u);
  // Moved: extent 1's bytes copied to extent 2's place.
  cache::IndexInfo info;
  {
    auto index = cache::LoadIndex(s.Paths().idx()).value();
    info = index.info();
  }
  cache::KeyBytes data_key = s.config.master_key->Unwrap(info.wrapped_key).value();
  const cache::PageSealer entry(data_key, std::strtoull(replica::KeyOf(kUrl).c_str(), nullptr, 16),
                                info.epoch);
  const ReplicaManifest m = LoadManifest(s.Paths(), &entry).value();
  const ReplicaExtent& a = m.extents[1];
  const ReplicaExtent& b = m.extents[2];
  std::vector<uint8_t> moved(std::min(a.bytes, b.bytes));
  {
    Fd fd = Fd::Open(data, O_RDWR).value();
    ASSERT_TRUE(PreadFull(fd.get(), moved.data(), moved.size(), a.offset - m.baskets_begin));
    ASSERT_TRUE(PwriteFull(fd.get(), moved.data(), moved.size(), b.offset - m.baskets_begin));
  }
  EXPECT_EQ(s.Served(true), s.Original());
  EXPECT_GE(s.Faults(), after_flip + 1);
}

// The same generation built again (the replica dropped in between) seals under a new salt:
// the same plaintext gives other ciphertext, and the earlier build's extents fail under the new
// manifest.
TEST(SealedReplica, AnExtentOfAnotherBuildOfTheGenerationFails) {
  Sealed s;
  s.Pass();
  const ReplicaBuildReport first = s.Build(ReplicaStage::kRelocate);
  ASSERT_EQ(first.generation, 1u);
  const std::string data = s.Paths().replica_data(1);
  const std::vector<uint8_t> old_data = ReadFile(data);
  ASSERT_TRUE(DropReplica(s.Paths()));
  s.Pass();  // a trace again
  const ReplicaBuildReport second = s.Build(ReplicaStage::kRelocate);
  ASSERT_EQ(second.generation, 1u);
  const std::vector<uint8_t> new_data = ReadFile(data);
  ASSERT_EQ(new_data.size(), old_data.size());  // the same layout
  EXPECT_NE(new_data, old_data);                // under another key
  Replace(data, old_data);
  EXPECT_EQ(s.Served(true), s.Original());
  EXPECT_GE(s.Faults(), second.baskets);  // every extent read failed and was rebuilt
}

TEST(SealedReplica, AFlippedOrSwappedManifestIsNotUsed) {
  Sealed s;
  s.Pass();
  s.Pass(kTwinUrl);  // the same file under another name: another entry, another data key
  ASSERT_EQ(s.Build(ReplicaStage::kRelocate).state, ReplicaState::kBuilt);
  ASSERT_EQ(s.Build(ReplicaStage::kRelocate, kTwinUrl).state, ReplicaState::kBuilt);
  const std::vector<uint8_t> good = ReadFile(s.Paths().manifest());
  // A bit of the sealed sections (the last byte before tag and trailer), the CRCs refitted.
  std::vector<uint8_t> m = good;
  m[m.size() - 8 - 16 - 1] ^= 0x01;
  RefitCrcs(m);
  Replace(s.Paths().manifest(), m);
  EXPECT_EQ(s.Served(false), s.Original());
  EXPECT_EQ(s.Faults(), 1u);
  // A bit of the clear header (missing_baskets), which the seal authenticates too.
  m = good;
  m[128] ^= 0x01;
  RefitCrcs(m);
  Replace(s.Paths().manifest(), m);
  EXPECT_EQ(s.Served(false), s.Original());
  EXPECT_EQ(s.Faults(), 2u);
  // The twin's manifest and data file (same content, same layout) in place of ours.
  Replace(s.Paths().manifest(), ReadFile(s.Paths(kTwinUrl).manifest()));
  Replace(s.Paths().replica_data(1), ReadFile(s.Paths(kTwinUrl).replica_data(1)));
  EXPECT_EQ(s.Served(false), s.Original());
  EXPECT_EQ(s.Faults(), 3u);
}

TEST(SealedReplica, WithoutTheKeyNoReplicaIsUsed) {
  Sealed s;
  s.Pass();
  ASSERT_EQ(s.Build(ReplicaStage::kReencode).state, ReplicaState::kBuilt);
  // Another master key: the entry is read from the origin, its replica unused.
  Config wrong = s.config;
  wrong.master_key = KeyOf(2);
  auto cache = Cache::Create(wrong).value();
  {
    auto f = cache->Open(kUrl, s.origin).value();
    EXPECT_FALSE(f->virtual_file());
    CachedSource src(*f);
    io::MemorySource original(s.bytes);
    EXPECT_EQ(Values(src), Values(original));
  }
  // Status says why, with no key and with the wrong one.
  for (const MasterKey* key : {static_cast<const MasterKey*>(nullptr), wrong.master_key.get()}) {
    auto status = ReplicaStatusOf(s.Paths(), key);
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(status->state, ReplicaState::kNone);
    EXPECT_NE(status->reason.find("sealed replica not read"), std::string::npos) << status->reason;
  }
  // The builder with the wrong key refuses the entry and leaves the replica alone.
  EXPECT_FALSE(BuildReplica(wrong, replica::KeyOf(kUrl), {}).has_value());
  EXPECT_EQ(s.Served(true), s.Original());
}

// Rotation rewraps the entry's data key, from which the replica's key derives: a handle that
// reads the virtual file while the master key is rotated reads every byte right, the replica
// serves new handles under the new key with no fault, and the old key opens neither the entry
// nor its replica.
TEST(SealedReplica, RekeyWhileAReaderReadsTheVirtualFile) {
  Sealed s;
  s.Pass();
  const ReplicaBuildReport r = s.Build(ReplicaStage::kReencode);
  ASSERT_EQ(r.state, ReplicaState::kBuilt) << r.reason;
  auto f = s.Open();
  ASSERT_TRUE(f->virtual_file());
  std::vector<uint8_t> want(f->size());
  ASSERT_TRUE(f->Read(0, want));
  std::atomic<bool> rekeyed{false};
  std::atomic<int> passes_after{0};
  std::atomic<int> wrong{0};
  std::thread reader([&] {
    std::vector<uint8_t> got(want.size());
    // Bounded: three passes after the rotation, or 2000 in all (a rotation that never ends).
    for (int pass = 0; pass < 2000 && passes_after.load() < 3; ++pass) {
      const bool after = rekeyed.load();
      std::fill(got.begin(), got.end(), 0);
      if (!f->Read(0, got) || got != want) {
        ++wrong;
      }
      passes_after += after ? 1 : 0;
    }
  });
  const std::shared_ptr<const MasterKey> old_key = s.config.master_key;
  const std::shared_ptr<const MasterKey> new_key = KeyOf(2);
  auto outcome = cache::RekeyEntry(s.Paths(), *old_key, *new_key);
  rekeyed = true;
  reader.join();
  ASSERT_TRUE(outcome.has_value()) << outcome.error().ToString();
  EXPECT_EQ(*outcome, cache::RekeyOutcome::kRewrapped);
  EXPECT_EQ(passes_after.load(), 3);
  EXPECT_EQ(wrong.load(), 0);
  {
    // A new handle in the process that still runs with the old key, the entry open in it (it
    // shares the open entry's data key: the replica again).
    auto g = s.Open();
    std::vector<uint8_t> got(g->size());
    ASSERT_TRUE(g->Read(0, got));
    EXPECT_TRUE(g->virtual_file() ? got == want : got == s.bytes);
  }
  f->Close();
  ASSERT_TRUE(s.cache->Flush());
  EXPECT_EQ(s.Faults(), 0u);
  s.cache.reset();  // its write-behind published what it stored, keeping the new wrapping
  EXPECT_EQ(cache::LoadIndex(s.Paths().idx())->info().key_id, new_key->id());

  // The new key: the same replica (no rebuild), every byte of it right, read from disk alone.
  s.config = s.Keyed(new_key);
  s.cache = Cache::Create(s.config).value();
  const auto offline = std::make_shared<MemoryOrigin>(s.bytes);
  {
    auto g = s.cache->Open(kUrl, offline).value();
    ASSERT_TRUE(g->virtual_file());
    std::vector<uint8_t> got(want.size());
    ASSERT_TRUE(g->Read(0, got));
    EXPECT_TRUE(got == want);
  }
  EXPECT_EQ(offline->read_calls(), 0u);
  EXPECT_EQ(s.Served(true), s.Original());
  EXPECT_EQ(s.Faults(), 0u);
  auto status = ReplicaStatusOf(s.Paths(), new_key.get());
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->generation, r.generation);
  EXPECT_EQ(status->stage, 2);
  auto v = cache::VerifyEntry(s.Paths(), false, 2000, new_key.get(), Hooks().get());
  ASSERT_TRUE(v.has_value()) << v.error().ToString();
  EXPECT_FALSE(v->bad()) << v->replica_error;
  EXPECT_EQ(v->replica_extents_ok, r.baskets);

  // The old key: it unwraps no data key, so no sealer opens the manifest or an extent; the
  // entry is passed through, the replica neither used, reported nor rebuilt.
  const cache::IndexInfo info = cache::LoadIndex(s.Paths().idx())->info();
  EXPECT_FALSE(old_key->Unwrap(info.wrapped_key).has_value());
  Config old = s.Keyed(old_key);
  auto old_cache = Cache::Create(old).value();
  {
    auto g = old_cache->Open(kUrl, s.origin).value();
    EXPECT_TRUE(g->pass_through());
    EXPECT_FALSE(g->virtual_file());
  }
  auto old_status = ReplicaStatusOf(s.Paths(), old_key.get());
  ASSERT_TRUE(old_status.has_value());
  EXPECT_EQ(old_status->state, ReplicaState::kNone);
  EXPECT_NE(old_status->reason.find("sealed replica not read"), std::string::npos)
      << old_status->reason;
  EXPECT_FALSE(BuildReplica(old, replica::KeyOf(kUrl), {}).has_value());
  auto ov = cache::VerifyEntry(s.Paths(), false, 2000, old_key.get(), Hooks().get());
  ASSERT_TRUE(ov.has_value()) << ov.error().ToString();
  EXPECT_TRUE(ov->sealed_unchecked);  // not bad: the new key's holder can check it
  EXPECT_FALSE(ov->bad()) << ov->replica_error;
  EXPECT_EQ(ov->replica_extents_ok, 0u);
}

// With FERRY_FUZZ_SEED_DIR set, writes the seeds of fuzz/replica_sealed_fuzz.cc there: this
// cache's real stage-1 and stage-2 manifests, opened with the entry's key and sealed again under
// the fuzzer's fixed entry (data key 32 x 0x42, entry key 0x5eed5eed5eed5eed, epoch 7), each as
// it is (first byte 1: parsed raw) and with its blob in the clear (first byte 0: the fuzzer seals
// it). Skipped otherwise.
TEST(SealedReplica, WritesFuzzSeeds) {
  const char* out = std::getenv("FERRY_FUZZ_SEED_DIR");
  if (out == nullptr) {
    GTEST_SKIP() << "FERRY_FUZZ_SEED_DIR not set";
  }
  cache::KeyBytes fixed{};
  fixed.fill(0x42);
  const cache::PageSealer fuzz_entry(fixed, 0x5eed5eed5eed5eedULL, 7);
  Sealed s;
  s.Pass();
  for (ReplicaStage stage : {ReplicaStage::kRelocate, ReplicaStage::kReencode}) {
    const ReplicaBuildReport r = s.Build(stage);
    ASSERT_EQ(r.state, ReplicaState::kBuilt) << r.reason;
    const ReplicaManifest m = s.Manifest();
    std::vector<uint8_t> sealed;
    m.Encode(sealed, m.Sealer(fuzz_entry).get());
    ASSERT_TRUE(ReplicaManifest::Decode(sealed, &fuzz_entry).has_value());
    // The clear form: the blob (after the URL's section, up to the tag) opened in place.
    std::vector<uint8_t> clear = sealed;
    const size_t blob = 160 + (4 + m.url.size() + 7) / 8 * 8;
    const size_t end = clear.size() - 8 - 16;
    SealTag tag{};
    std::copy_n(clear.begin() + static_cast<long>(end), tag.size(), tag.begin());
    ASSERT_TRUE(m.Sealer(fuzz_entry)
                    ->OpenManifest({clear.data(), blob}, {clear.data() + blob, end - blob}, tag));
    const std::string name = "stage" + std::to_string(r.stage);
    for (const auto& [mode, bytes] :
         {std::pair{uint8_t{1}, &sealed}, std::pair{uint8_t{0}, &clear}}) {
      std::vector<uint8_t> seed(1 + bytes->size(), mode);
      std::copy(bytes->begin(), bytes->end(), seed.begin() + 1);
      Replace(std::string(out) + "/" + (mode == 1 ? "sealed-" : "clear-") + name, seed);
    }
  }
}

TEST(SealedReplica, ManifestOpensOnlyWithItsEntrysSealer) {
  ReplicaManifest m;
  m.url = "root://h//f.root";
  m.epoch = 7;
  m.origin_size = 1000;
  m.generation = 3;
  m.baskets_begin = 1200;
  m.data_bytes = 100;
  m.virtual_size = 1300;
  m.extents.push_back({1200, 100, 0, 400, 120, 0, 3, 0});
  m.extents[0].tag.fill(0x5a);
  m.trees.emplace_back("Events");
  m.branches.push_back({0, "Jet_pt_secret_branch_name"});
  m.sealed = true;
  m.salt = RandomReplicaSalt();
  cache::KeyBytes k{};
  k.fill(9);
  const cache::PageSealer entry(k, 42, 7);
  std::vector<uint8_t> bytes;
  m.Encode(bytes, m.Sealer(entry).get());
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  EXPECT_EQ(text.find("Jet_pt_secret"), std::string_view::npos);
  auto back = ReplicaManifest::Decode(bytes, &entry);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->branches[0].name, "Jet_pt_secret_branch_name");
  EXPECT_EQ(back->extents[0].tag, m.extents[0].tag);
  EXPECT_EQ(ReplicaManifest::Decode(bytes).error().code(), ErrorCode::kPermission);
  const cache::PageSealer other_entry(k, 43, 7);
  EXPECT_EQ(ReplicaManifest::Decode(bytes, &other_entry).error().code(), ErrorCode::kCorruption);
  // A plain manifest is refused for an encrypted entry.
  m.sealed = false;
  m.Encode(bytes);
  EXPECT_EQ(ReplicaManifest::Decode(bytes, &entry).error().code(), ErrorCode::kCorruption);
  EXPECT_TRUE(ReplicaManifest::Decode(bytes).has_value());
}

}  // namespace
}  // namespace ferry::replica
