// The replica's two stages (replica_build.h, ReplicaStage): a relocated replica (stage 1) reads
// to the original's values for TTree and RNTuple files, verifies, and serves a damaged unit
// rebuilt from the original; a re-encoded generation (stage 2) replaces it while three readers
// read on, and a view opened across that publish takes the new generation; the choice between
// them; the drainer's relocation, published before it is durable, serves no wrong byte after a
// crash and keeps the byte tier until its re-encoding; a changed origin drops either stage.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/fd.h"
#include "cache/cache.h"
#include "cache/config.h"
#include "cache/entry_store.h"
#include "cache/testing/cached_source.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "cache/verify.h"
#include "io/local_source.h"
#include "replica/hooks.h"
#include "replica/replica_build.h"
#include "replica/replica_codec.h"
#include "replica/replica_testing.h"
#include "replica/replica_view.h"
#include "rootwrite/sample_tree.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::replica {
namespace {

using cache::Cache;
using cache::CachedFile;
using cache::CachedSource;
using cache::Config;
using cache::Counter;
using cache::MemoryOrigin;
using cache::PathsFor;

constexpr const char* kUrl = "root://origin.example:1094//data/stages.root";

// A ROOT-written RNTuple (zstd); empty when data/rntuple is absent.
std::vector<uint8_t> RntupleFile() {
  if (testing::RntupleDataDir().empty()) {
    return {};
  }
  return testing::ReadWholeFile(testing::RntupleDataDir()
                                + "/Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root");
}

struct Stages {
  testing::TempDir dir;
  Config config = ServingConfig(dir.path() + "/cache");
  std::vector<uint8_t> bytes;
  std::shared_ptr<MemoryOrigin> origin;
  std::shared_ptr<Cache> cache;

  explicit Stages(std::vector<uint8_t> file) : bytes(std::move(file)) {
    config.revalidate_s = 0;  // the origin is asked at every open
    origin = std::make_shared<MemoryOrigin>(bytes);
    cache = Cache::Create(config).value();
  }
  std::unique_ptr<CachedFile> Open() const { return cache->Open(kUrl, origin).value(); }
  // A filling pass that reads every unit whole.
  void Pass() const {
    auto f = Open();
    std::vector<uint8_t> whole(bytes.size());
    ASSERT_TRUE(f->Read(0, whole));
  }
  ReplicaBuildReport Build(ReplicaStage stage, ReplicaBuildOptions options = {}) const {
    EXPECT_TRUE(cache->Flush());
    options.stage = stage;
    auto r = BuildReplica(config, KeyOf(kUrl), options);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.value_or(ReplicaBuildReport{});
  }
  std::map<std::string, std::string> Original() const {
    io::MemorySource src(bytes);
    return Values(src);
  }
  std::vector<uint8_t> ReadWhole(CachedFile& f) const {
    std::vector<uint8_t> out(f.size());
    EXPECT_TRUE(f.Read(0, out));
    return out;
  }
  cache::EntryPaths Paths() const { return PathsFor(config.dir, KeyOf(kUrl)); }
};

// Stage 1 end to end: relocated as stored, served to the original's values, verified clean,
// and a damaged unit rebuilt from the original (a copy, as the builder made it).
void ExpectStageOneServes(Stages& s) {
  s.Pass();
  const ReplicaBuildReport r = s.Build(ReplicaStage::kRelocate);
  ASSERT_EQ(r.state, ReplicaState::kBuilt) << r.reason;
  EXPECT_EQ(r.stage, 1);
  EXPECT_GT(r.new_baskets, 0u);
  ASSERT_FALSE(r.encodings.empty());
  for (const auto& [name, counts] : r.encodings) {
    EXPECT_EQ(name.rfind("stored:", 0), 0u) << name;  // no codec ran
  }
  {
    auto f = s.Open();
    ASSERT_TRUE(f->virtual_file());
    CachedSource src(*f);
    EXPECT_EQ(Values(src), s.Original());
  }
  auto v = cache::VerifyEntry(s.Paths(), /*repair=*/false, 2000, nullptr, Hooks().get());
  ASSERT_TRUE(v.has_value()) << v.error().ToString();
  EXPECT_FALSE(v->bad()) << v->replica_error;
  EXPECT_EQ(v->replica_extents_ok, r.baskets);

  {
    Fd fd = Fd::Open(s.Paths().replica_data(r.generation), O_RDWR).value();
    uint8_t b = 0;
    ASSERT_TRUE(PreadFull(fd.get(), &b, 1, 100));
    b ^= 0x10;
    ASSERT_TRUE(PwriteFull(fd.get(), &b, 1, 100));
  }
  auto f = s.Open();
  CachedSource src(*f);
  EXPECT_EQ(Values(src), s.Original());
  EXPECT_GE(s.cache->counters().Get(Counter::kReplicaFaults), 1u);
}

// The replica_codec conf key, checked by the tier when a host parses the cache's settings.
TEST(ReplicaStages, TheCodecSettingIsAutoZstdLz4OrNone) {
  for (const char* ok : {"auto", "zstd", "zstd:1", "zstd:19", "lz4", "none"}) {
    EXPECT_TRUE(CheckReplicaCodec(ok)) << ok;
    EXPECT_TRUE(cache::ConfigFromMap({{"replica_codec", ok}}, false, Hooks().get())) << ok;
  }
  for (const char* bad : {"zlib:1", "lzma", "zstd:20", "fast", ""}) {
    auto c = cache::ConfigFromMap({{"replica_codec", bad}}, false, Hooks().get());
    ASSERT_FALSE(c) << bad;
    EXPECT_EQ(c.error().message(), "cache setting replica_codec = '" + std::string(bad)
                                       + "': must be auto, zstd:N, lz4 or none");
  }
}

TEST(ReplicaStages, ARelocatedTreeServesTheOriginalValues) {
  testing::TempDir dir;
  Stages s(SampleTreeBytes(dir));
  ExpectStageOneServes(s);
}

TEST(ReplicaStages, ARelocatedRntupleServesTheOriginalValues) {
  std::vector<uint8_t> file = RntupleFile();
  if (file.empty()) {
    GTEST_SKIP() << "data/rntuple not present";
  }
  Stages s(std::move(file));
  ExpectStageOneServes(s);
}

// Three readers hold the stage-1 layout and read it whole, again and again, while stage 2 is
// built and published: every byte is the one of their layout; handles opened after read the
// new generation to the original's values. The build waits at its first pause until each
// reader has read once since it started, so the two overlap whatever the scheduling.
TEST(ReplicaStages, AReencodedGenerationReplacesStageOneWhileReadersReadOn) {
  testing::TempDir dir;
  Stages s(SampleTreeBytes(dir));
  s.Pass();
  const ReplicaBuildReport first = s.Build(ReplicaStage::kRelocate);
  ASSERT_EQ(first.stage, 1);
  const std::vector<uint8_t> stage_one = [&] {
    auto f = s.Open();
    return s.ReadWhole(*f);
  }();

  const uint64_t faults_before = s.cache->counters().Get(Counter::kReplicaFaults);
  const uint64_t origin_before = s.origin->bytes();
  std::mutex mu;
  std::condition_variable cv;
  bool building = false;
  int reads_while_building = 0;
  std::atomic<bool> published{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  readers.reserve(3);
  for (int k = 0; k < 3; ++k) {
    readers.emplace_back([&] {
      auto f = s.Open();
      bool counted = false;
      for (bool last = false; !last;) {
        last = published.load();
        bad += s.ReadWhole(*f) == stage_one ? 0 : 1;
        std::lock_guard<std::mutex> lock(mu);
        if (building && !counted) {
          counted = true;
          reads_while_building += 1;
          cv.notify_all();
        }
      }
    });
  }
  ReplicaBuildOptions options;
  options.pause = [&](const std::function<bool()>&) {
    std::unique_lock<std::mutex> lock(mu);
    building = true;
    cv.wait(lock, [&] { return reads_while_building == 3; });
  };
  const ReplicaBuildReport second = s.Build(ReplicaStage::kReencode, options);
  published = true;
  for (std::thread& t : readers) {
    t.join();
  }
  EXPECT_EQ(bad.load(), 0);
  // Served from the replica throughout: no fault, no origin read.
  EXPECT_EQ(s.cache->counters().Get(Counter::kReplicaFaults), faults_before);
  EXPECT_EQ(s.origin->bytes(), origin_before);
  ASSERT_EQ(second.state, ReplicaState::kBuilt) << second.reason;
  EXPECT_EQ(second.stage, 2);
  EXPECT_EQ(second.generation, first.generation + 1);
  EXPECT_EQ(second.new_baskets, first.baskets);  // every unit re-encoded from stage 1's copy
  for (const auto& [name, counts] : second.encodings) {
    EXPECT_NE(name.rfind("stored:", 0), 0u) << name;
  }
  auto f = s.Open();
  EXPECT_EQ(f->replica_generation(), second.generation);
  CachedSource src(*f);
  EXPECT_EQ(Values(src), s.Original());
  auto status = ReplicaStatusOf(s.Paths());
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->stage, 2);
}

// A reader loads stage 1's manifest; before it opens the data file, stage 2 is published and
// stage 1's data file removed. The reader gets stage 2's view, not an error (an error would
// serve the original layout, counted as a replica fault). A data file missing with no newer
// manifest is still an error.
TEST(ReplicaStages, AViewOpenedAcrossAPublishTakesTheNewGeneration) {
  testing::TempDir dir;
  Stages s(SampleTreeBytes(dir));
  s.Pass();
  const ReplicaBuildReport first = s.Build(ReplicaStage::kRelocate);
  ASSERT_EQ(first.stage, 1);
  const ReplicaManifest m1 = LoadManifest(s.Paths()).value();
  cache::IndexInfo info;
  info.url = m1.url;
  info.epoch = m1.epoch;
  info.origin_size = m1.origin_size;
  info.origin_mtime = m1.origin_mtime;

  ReplicaBuildReport second;
  int loads = 0;
  auto view = ReplicaView::Open(s.Paths(), info, nullptr, [&] {
    if (++loads == 1) {
      second = s.Build(ReplicaStage::kReencode);
    }
  });
  ASSERT_EQ(second.state, ReplicaState::kBuilt) << second.reason;
  ASSERT_TRUE(view.has_value()) << view.error().ToString();
  EXPECT_EQ(loads, 2);
  EXPECT_EQ((*view)->manifest().generation, second.generation);
  EXPECT_NE(second.generation, first.generation);

  ASSERT_EQ(::unlink(s.Paths().replica_data(second.generation).c_str()), 0);
  auto gone = ReplicaView::Open(s.Paths(), info, nullptr);
  ASSERT_FALSE(gone.has_value());
  EXPECT_EQ(gone.error().sys_errno(), ENOENT);
}

// The drainer's relocation (relocate_first) is published before its data file is durable and
// releases nothing. A crash that loses the data file's bytes (zeros where writeback never
// happened, or a file cut short) never serves a wrong byte: each damaged extent is rebuilt
// from the byte tier, which still holds every unit (the origin is not asked), or the original
// layout serves. The re-encoding that follows runs on the become_idle thread, is durable, and
// releases the byte tier's copies.
TEST(ReplicaStages, ARelocationFirstKeepsTheByteTierUntilTheReencoding) {
  for (const bool cut_short : {false, true}) {
    testing::TempDir dir;
    Stages s(SampleTreeBytes(dir));
    s.Pass();
    ReplicaBuildOptions first;
    first.relocate_first = true;
    first.become_idle = [] {
      ADD_FAILURE() << "a relocation ran on the idle thread";
    };
    const ReplicaBuildReport one = s.Build(ReplicaStage::kRelocate, first);
    ASSERT_EQ(one.state, ReplicaState::kBuilt) << one.reason;
    EXPECT_EQ(one.stage, 1);
    EXPECT_TRUE(one.release_deferred);
    EXPECT_EQ(one.released_bytes, 0u);

    // The crash: the data file's bytes never reached the disk.
    const std::string data = s.Paths().replica_data(one.generation);
    if (cut_short) {
      ASSERT_EQ(::truncate(data.c_str(), 0), 0);
    } else {
      Fd fd = Fd::Open(data, O_RDWR).value();
      const std::vector<uint8_t> zeros(FileSize(fd.get()).value());
      ASSERT_TRUE(PwriteFull(fd.get(), zeros.data(), zeros.size(), 0));
    }
    s.cache.reset();  // a new process
    s.cache = Cache::Create(s.config).value();
    const uint64_t origin_before = s.origin->bytes();
    {
      auto f = s.Open();
      EXPECT_EQ(static_cast<bool>(f->virtual_file()), !cut_short);
      CachedSource src(*f);
      EXPECT_EQ(Values(src), s.Original());
    }
    EXPECT_EQ(s.origin->bytes(), origin_before);
    if (!cut_short) {
      EXPECT_GE(s.cache->counters().Get(Counter::kReplicaFaults), 1u);
    }

    std::thread::id idle_thread;
    ReplicaBuildOptions second;
    second.become_idle = [&] {
      idle_thread = std::this_thread::get_id();
    };
    const ReplicaBuildReport two = s.Build(ReplicaStage::kReencode, second);
    ASSERT_EQ(two.state, ReplicaState::kBuilt) << two.reason;
    EXPECT_EQ(two.stage, 2);
    EXPECT_NE(idle_thread, std::thread::id());
    EXPECT_NE(idle_thread, std::this_thread::get_id());
    EXPECT_GT(two.cpu_ns, 0u);
    EXPECT_GT(two.released_bytes, 0u);
    EXPECT_EQ(s.origin->bytes(), origin_before);
    auto f = s.Open();
    ASSERT_TRUE(f->virtual_file());
    CachedSource src(*f);
    EXPECT_EQ(Values(src), s.Original());
    auto v = cache::VerifyEntry(s.Paths(), /*repair=*/false, 2000, nullptr, Hooks().get());
    ASSERT_TRUE(v.has_value()) << v.error().ToString();
    EXPECT_FALSE(v->bad()) << v->replica_error;
  }
}

// The drainer's build of a file a pass still has open runs on the become_low thread (it may
// not slow that pass); of a closed file, on the caller's.
TEST(ReplicaStages, AFileStillOpenIsBuiltOnTheLowThread) {
  testing::TempDir dir;
  Stages s(SampleTreeBytes(dir));
  s.Pass();
  std::thread::id low;
  ReplicaBuildOptions options;
  options.become_low = [&] {
    low = std::this_thread::get_id();
  };
  {
    auto reading = s.Open();  // a pass that moved past the file and reads on
    const ReplicaBuildReport r = s.Build(ReplicaStage::kRelocate, options);
    ASSERT_EQ(r.state, ReplicaState::kBuilt) << r.reason;
    EXPECT_NE(low, std::thread::id());
    EXPECT_NE(low, std::this_thread::get_id());
    EXPECT_GT(r.cpu_ns, 0u);
  }
  ASSERT_TRUE(s.cache->Flush());
  low = std::thread::id();
  // Closed (a new process holds nothing): built here.
  s.cache.reset();
  s.cache = Cache::Create(s.config).value();
  EXPECT_EQ(s.Build(ReplicaStage::kReencode, options).stage, 2);
  EXPECT_EQ(low, std::thread::id());
}

// The pass closes the file while its relocation runs on the low thread (the pass ended): the
// low thread hands it back, and the relocation is redone on the caller's thread, at its
// priority — a thread at nice 19 cannot raise its own back.
TEST(ReplicaStages, ARelocationTheCloseOvertakesIsRedoneOnTheCallersThread) {
  testing::TempDir dir;
  Stages s(SampleTreeBytes(dir));
  s.Pass();
  ASSERT_TRUE(s.cache->Flush());
  std::unique_ptr<CachedFile> reading = s.Open();  // a pass that moved past the file
  std::thread::id low;
  std::thread::id chose;
  ReplicaBuildOptions options;
  options.stage = ReplicaStage::kAuto;
  options.relocate_first = true;
  options.become_low = [&] {
    low = std::this_thread::get_id();
    reading.reset();  // the pass ends: its process lets the file go
    s.cache.reset();
  };
  options.reencode_fits = [&](std::string* why) {
    chose = std::this_thread::get_id();
    *why = "test: the copy";
    return false;
  };
  auto r = BuildReplica(s.config, KeyOf(kUrl), options);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->state, ReplicaState::kBuilt) << r->reason;
  EXPECT_EQ(r->stage, 1);
  EXPECT_TRUE(r->published);
  EXPECT_NE(low, std::thread::id());
  EXPECT_NE(low, std::this_thread::get_id());
  EXPECT_EQ(chose, std::this_thread::get_id());  // the relocation that counted ran here
  s.cache = Cache::Create(s.config).value();
  auto f = s.Open();
  ASSERT_TRUE(f->virtual_file());
  CachedSource src(*f);
  EXPECT_EQ(Values(src), s.Original());
}

TEST(ReplicaStages, TheChoiceFollowsTheMeasureAndAReencodeGivesWay) {
  testing::TempDir dir;
  Stages s(SampleTreeBytes(dir));
  s.Pass();
  ReplicaBuildOptions no_room;
  no_room.reencode_fits = [](std::string* why) {
    *why = "0.3 cores spare";
    return false;
  };
  const ReplicaBuildReport one = s.Build(ReplicaStage::kAuto, no_room);
  EXPECT_EQ(one.stage, 1);
  EXPECT_NE(one.stage_why.find("0.3 cores spare"), std::string::npos) << one.stage_why;
  // Nothing new and still no room: stage 1 stays, nothing is written.
  EXPECT_FALSE(s.Build(ReplicaStage::kAuto, no_room).published);

  // A re-encoding held back by a pass gives way to a relocation that waits.
  ReplicaBuildOptions waiting;
  waiting.pause = [](const std::function<bool()>& give_up) {
    while (!give_up()) {
    }
  };
  waiting.preempt = [] {
    return true;
  };
  const ReplicaBuildReport left = s.Build(ReplicaStage::kReencode, waiting);
  EXPECT_EQ(left.state, ReplicaState::kBuilding);
  EXPECT_EQ(left.reason, kPreemptedReason);
  EXPECT_EQ(ReplicaStatusOf(s.Paths())->stage, 1);
  // So does one that has the room (the pass ended): the copies the pass left go first.
  ReplicaBuildOptions free_to_run;
  free_to_run.pause = [](const std::function<bool()>&) {
  };
  free_to_run.preempt = [] {
    return true;
  };
  EXPECT_EQ(s.Build(ReplicaStage::kReencode, free_to_run).reason, kPreemptedReason);
  EXPECT_EQ(ReplicaStatusOf(s.Paths())->stage, 1);

  ReplicaBuildOptions room;
  room.reencode_fits = [](std::string* why) {
    *why = "1.6 cores spare";
    return true;
  };
  const ReplicaBuildReport two = s.Build(ReplicaStage::kAuto, room);
  EXPECT_EQ(two.stage, 2);
  EXPECT_TRUE(two.published);
}

// A new version of the file at the origin: neither stage's replica is served or kept.
TEST(ReplicaStages, AChangedOriginDropsEitherStage) {
  for (const ReplicaStage last : {ReplicaStage::kRelocate, ReplicaStage::kReencode}) {
    testing::TempDir dir;
    Stages s(SampleTreeBytes(dir));
    s.Pass();
    s.Build(ReplicaStage::kRelocate);
    const ReplicaBuildReport r = s.Build(last);
    ASSERT_EQ(r.stage, last == ReplicaStage::kRelocate ? 1 : 2);
    ASSERT_TRUE(s.Open()->virtual_file());
    s.cache.reset();  // a new process
    std::vector<uint8_t> changed = s.bytes;
    changed.push_back(0);
    s.origin->Replace(changed, 1800000000);
    s.cache = Cache::Create(s.config).value();
    auto f = s.Open();
    EXPECT_FALSE(f->virtual_file());
    EXPECT_EQ(f->size(), changed.size());
    auto status = ReplicaStatusOf(s.Paths());
    ASSERT_TRUE(status.has_value());
    EXPECT_NE(status->state, ReplicaState::kBuilt);
    EXPECT_EQ(status->stage, 0);
  }
}

}  // namespace
}  // namespace ferry::replica
