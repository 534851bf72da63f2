// Engine tests over a MemoryOrigin: fill, hits, CRC failures, fail-open, retries, admission.
#include "cache/cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "base/fd.h"
#include "cache/capacity.h"
#include "cache/conf_file.h"
#include "cache/entry.h"
#include "cache/entry_store.h"
#include "cache/lock_file.h"
#include "cache/testing/memory_origin.h"
#include "cache/testing/recording_replica_hooks.h"
#include "cache/url.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

// Counting allocator: proves the hit path allocates nothing.
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) {
    return p;
  }
  throw std::bad_alloc();
}
// GCC's -Wmismatched-new-delete cannot see that the replaced operator new uses malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace ferry::cache {
namespace {

constexpr const char* kUrl = "root://origin.example:1094//data/file.root?authz=secret";

Config TestConfig(const std::string& dir) {
  return testing::CacheTestConfig(dir);
}

struct Fixture {
  testing::TempDir dir;
  std::vector<uint8_t> bytes = testing::PseudoRandomBytes(3 * 1024 * 1024 + 123, 7);
  std::shared_ptr<MemoryOrigin> origin = std::make_shared<MemoryOrigin>(bytes);
  Config config = TestConfig(dir.path() + "/cache");
};

std::vector<uint8_t> ReadRange(CachedFile& f, uint64_t off, size_t len) {
  std::vector<uint8_t> out(len);
  Status st = f.Read(off, out);
  EXPECT_TRUE(st) << (st ? "" : st.error().ToString());
  return out;
}

std::vector<uint8_t> Slice(const std::vector<uint8_t>& v, uint64_t off, size_t len) {
  return {v.begin() + static_cast<long>(off), v.begin() + static_cast<long>(off + len)};
}

// The benchmark's shape: 64 chunks of 2-16 KiB, one per slot.
std::vector<std::pair<uint64_t, size_t>> SparsePattern(uint64_t size, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<uint64_t, size_t>> out;
  const uint64_t slot = size / static_cast<uint64_t>(n);
  for (int i = 0; i < n; ++i) {
    size_t len = 2048 + rng() % (16384 - 2048);
    out.push_back({static_cast<uint64_t>(i) * slot + rng() % (slot - len), len});
  }
  return out;
}

Status ReadPattern(CachedFile& f,
                   const std::vector<std::pair<uint64_t, size_t>>& pattern,
                   std::vector<std::vector<uint8_t>>& out) {
  out.assign(pattern.size(), {});
  std::vector<io::ReadRequest> reqs(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    out[i].resize(pattern[i].second);
    reqs[i] = {pattern[i].first, out[i], {}};
  }
  return f.ReadV(reqs);
}

TEST(CacheTest, ColdFetchesExactBytesWarmHitsWithoutOrigin) {
  Fixture fx;
  auto cache = Cache::Create(fx.config);
  ASSERT_TRUE(cache) << cache.error().ToString();
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_FALSE((*f)->pass_through());
  auto pattern = SparsePattern(fx.bytes.size(), 64, 1);
  uint64_t requested = 0;
  for (auto& [o, l] : pattern) {
    requested += l;
  }
  std::vector<std::vector<uint8_t>> got;
  ASSERT_TRUE(ReadPattern(**f, pattern, got));
  for (size_t i = 0; i < pattern.size(); ++i) {
    ASSERT_EQ(got[i], Slice(fx.bytes, pattern[i].first, pattern[i].second)) << i;
  }
  EXPECT_EQ(fx.origin->bytes(), requested);  // exact bytes, no page rounding
  EXPECT_EQ(fx.origin->read_calls(), 1u);    // one vector read
  ASSERT_TRUE((*cache)->Flush());
  ASSERT_TRUE(ReadPattern(**f, pattern, got));
  for (size_t i = 0; i < pattern.size(); ++i) {
    ASSERT_EQ(got[i], Slice(fx.bytes, pattern[i].first, pattern[i].second)) << i;
  }
  EXPECT_EQ(fx.origin->read_calls(), 1u);
  Counters& c = (*cache)->counters();
  EXPECT_EQ(c.Get(Counter::kMisses), 64u);
  EXPECT_EQ(c.Get(Counter::kHits), 64u);
  EXPECT_EQ(c.Get(Counter::kBytesFromCache), requested);
  EXPECT_EQ(c.Get(Counter::kBytesFromOrigin), requested);
  EXPECT_EQ(c.Get(Counter::kOriginRequests), 1u);
  // Disk holds what was read, not whole pages: data blocks + fragment log ~ requested, plus
  // the block of each edge fragment's copy in the data file (one pread per warm range).
  const EntryPaths paths = PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl)));
  const uint64_t disk = AllocatedBytes(paths.data()) + AllocatedBytes(paths.frag());
  EXPECT_LT(disk, requested + requested / 10 + uint64_t{2} * 64 * 4096 + 8192);
  // The token never reached the disk.
  auto index = LoadIndex(paths.idx());
  ASSERT_TRUE(index);
  EXPECT_EQ(index->info().url, "root://origin.example:1094/data/file.root");
}

TEST(CacheTest, AReadMarksTheCacheActive) {
  // A background replica build waits while DIR/.active is fresh (cache/activity_mark.h).
  Fixture fx;
  auto cache = Cache::Create(fx.config);
  ASSERT_TRUE(cache) << cache.error().ToString();
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f) << f.error().ToString();
  const std::string mark = fx.config.dir + "/" + kActivityFile;
  EXPECT_FALSE(PathExists(mark));
  std::vector<uint8_t> buf(100);
  ASSERT_TRUE((*f)->Read(0, buf));
  EXPECT_TRUE(PathExists(mark));
}

// replica = auto, its build requests recorded, on a clock the test moves; the bytes begin as
// a ROOT file's, so a file that gets new bytes wishes for a replica.
struct AutoReplicaFixture : Fixture {
  std::shared_ptr<RecordingReplicaHooks> hooks = std::make_shared<RecordingReplicaHooks>();
  std::shared_ptr<std::atomic<int64_t>> now = std::make_shared<std::atomic<int64_t>>(NowNs());
  AutoReplicaFixture() {
    config.replica = ReplicaMode::kAuto;
    config.replica_hooks = hooks;
    config.clock_ns = [clock = now] {
      return clock->load();
    };
    std::memcpy(bytes.data(), "root", 4);
  }
};

// replica = auto (Cache::NoteRead): a file whose reads stopped while the process reads another
// file it has open gets its replica asked for then, not at its close; once per quiet spell, and
// after twice the quiet once read again.
TEST(CacheTest, AReaderThatMovedPastAFileAsksForItsReplicaBeforeItsClose) {
  AutoReplicaFixture fx;
  auto origin = std::make_shared<MemoryOrigin>(fx.bytes);
  auto& hooks = fx.hooks;
  auto& now = fx.now;
  auto cache = Cache::Create(fx.config);
  ASSERT_TRUE(cache) << cache.error().ToString();
  auto a = (*cache)->Open("root://h//a.root", origin);
  auto b = (*cache)->Open("root://h//b.root", origin);
  ASSERT_TRUE(a && b);
  const std::string key_a = EntryKey(*NormalizeUrl("root://h//a.root", {}));
  const std::string key_b = EntryKey(*NormalizeUrl("root://h//b.root", {}));
  // How many times the builds asked for since the last look name `key`.
  auto asked = [&](const std::string& key) {
    const std::vector<std::string> builds = hooks->TakeBuilds();
    return std::count(builds.begin(), builds.end(), key);
  };
  auto read_b_after = [&](int64_t ms, uint64_t offset) {
    now->fetch_add(ms * 1'000'000);
    ReadRange(**b, offset, 4096);
    ASSERT_TRUE((*cache)->Flush());
  };
  ReadRange(**a, 0, 65536);  // new bytes: a replica wish
  read_b_after(1, 0);        // both opened and read, as an analysis opens its files
  // a read on, b quiet: a was first read before b, so the reader has not moved past b.
  now->fetch_add(300'000'000);
  ReadRange(**a, 65536, 4096);
  ASSERT_TRUE((*cache)->Flush());
  EXPECT_EQ(asked(key_b), 0);
  // The checks run at most every 50 ms: the steps below are longer.
  read_b_after(200, 8192);
  EXPECT_EQ(hooks->TakeBuilds(), std::vector<std::string>{}) << "a was read 200 ms ago";
  read_b_after(60, 16384);
  EXPECT_EQ(hooks->TakeBuilds(), std::vector<std::string>{key_a}) << "a quiet, b read";
  read_b_after(1000, 24576);
  EXPECT_EQ(asked(key_a), 0) << "asked once per quiet spell";
  // Read again with new bytes: asked again after twice the quiet.
  ReadRange(**a, 1 << 20, 65536);
  read_b_after(300, 32768);
  EXPECT_EQ(asked(key_a), 0) << "the second ask waits 500 ms";
  read_b_after(250, 40960);
  EXPECT_EQ(asked(key_a), 1);
  // Both files still open; the handle on a reads the original's bytes as before.
  EXPECT_EQ(ReadRange(**a, 0, 65536), Slice(fx.bytes, 0, 65536));
  // The asks say the file was still open; its last close, with new bytes, says closed (the
  // drainer builds it at full priority though this process still holds it a moment).
  EXPECT_EQ(hooks->TakeStillOpen(), (std::vector<bool>{true, true}));
  ReadRange(**a, 2 << 20, 65536);
  a->reset();
  ASSERT_TRUE((*cache)->Flush());
  EXPECT_EQ(hooks->TakeBuilds(), std::vector<std::string>{key_a});
  EXPECT_EQ(hooks->TakeStillOpen(), std::vector<bool>{false});
}

// An origin whose reads wait at a gate while it is closed (a fetch in flight for as long as the
// test wants).
class GatedOrigin final : public Origin {
 public:
  explicit GatedOrigin(std::vector<uint8_t> bytes) : inner_(std::move(bytes)) {}
  Result<OriginInfo> Stat() override { return inner_.Stat(); }
  void Read(std::span<OriginRead> reads) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (closed_) {
        waiting_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return !closed_; });
      }
    }
    inner_.Read(reads);
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  void WaitForAReader() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return waiting_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = false;
    cv_.notify_all();
  }

 private:
  MemoryOrigin inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  bool waiting_ = false;
};

// A read waiting on a fetch is no read that stopped: a file whose fetch is in flight (or not
// yet stored) is not moved past, however long ago its last read call was; once it is stored,
// it is.
TEST(CacheTest, AFileWithAFetchInFlightIsNotMovedPast) {
  AutoReplicaFixture fx;
  auto origin_a = std::make_shared<GatedOrigin>(fx.bytes);
  auto origin_b = std::make_shared<MemoryOrigin>(fx.bytes);
  auto& hooks = fx.hooks;
  auto& now = fx.now;
  auto cache = Cache::Create(fx.config);
  ASSERT_TRUE(cache) << cache.error().ToString();
  auto a = (*cache)->Open("root://h//a.root", origin_a);
  auto b = (*cache)->Open("root://h//b.root", origin_b);
  ASSERT_TRUE(a && b);
  const std::string key_a = EntryKey(*NormalizeUrl("root://h//a.root", {}));
  auto read_b_after = [&](int64_t ms, uint64_t offset) {
    now->fetch_add(ms * 1'000'000);
    ReadRange(**b, offset, 4096);
    ASSERT_TRUE((*cache)->Flush());
  };
  ReadRange(**a, 0, 65536);
  read_b_after(1, 0);
  origin_a->Close();
  std::thread slow([&] { ReadRange(**a, 1 << 20, 65536); });
  origin_a->WaitForAReader();
  read_b_after(300, 8192);
  read_b_after(300, 16384);
  EXPECT_EQ(hooks->TakeBuilds(), std::vector<std::string>{}) << "a's fetch is in flight";
  origin_a->Open();
  slow.join();
  ASSERT_TRUE((*cache)->Flush());
  read_b_after(300, 24576);
  EXPECT_EQ(hooks->TakeBuilds(), std::vector<std::string>{key_a}) << "a's bytes are stored";
}

TEST(CacheTest, NewProcessFindsPublishedPages) {
  Fixture fx;
  auto pattern = SparsePattern(fx.bytes.size(), 40, 2);
  std::vector<std::vector<uint8_t>> got;
  {
    auto cache = Cache::Create(fx.config);
    ASSERT_TRUE(cache);
    auto f = (*cache)->Open(kUrl, fx.origin);
    ASSERT_TRUE(f);
    ASSERT_TRUE(ReadPattern(**f, pattern, got));
    (*f)->Close();
  }  // the Cache destructor drains and publishes
  const uint64_t calls = fx.origin->read_calls();
  auto fresh_origin = std::make_shared<MemoryOrigin>(fx.bytes);
  auto cache = Cache::Create(fx.config);
  ASSERT_TRUE(cache);
  auto f = (*cache)->Open(kUrl, fresh_origin);
  ASSERT_TRUE(f);
  ASSERT_TRUE(ReadPattern(**f, pattern, got));
  for (size_t i = 0; i < pattern.size(); ++i) {
    ASSERT_EQ(got[i], Slice(fx.bytes, pattern[i].first, pattern[i].second));
  }
  EXPECT_EQ(fresh_origin->read_calls(), 0u);
  EXPECT_EQ(fresh_origin->stat_calls(), 0u);  // validated recently: no origin contact at all
  EXPECT_EQ(fx.origin->read_calls(), calls);
  auto merged = ReadStatsFile(fx.config.dir);
  ASSERT_TRUE(merged);
  (*f)->Close();
  merged = ReadStatsFile(fx.config.dir);
  EXPECT_EQ((*merged)[static_cast<size_t>(Counter::kHits)], 40u);
  EXPECT_EQ((*merged)[static_cast<size_t>(Counter::kMisses)], 40u);
}

// The write-behind is idle only once what it was given is stored and published. After a first
// publish, a miss keeps it busy (queued, then an entry whose next publish is an hour away) until
// a flush publishes it; then another process finds the bytes without the origin.
TEST(CacheTest, WriteBehindIdleMeansStoredAndPublished) {
  Fixture fx;
  fx.config.publish_ms = 3600 * 1000;
  auto cache = Cache::Create(fx.config);
  ASSERT_TRUE(cache);
  EXPECT_TRUE((*cache)->writer().idle());
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f);
  EXPECT_EQ(ReadRange(**f, 0, 4096), Slice(fx.bytes, 0, 4096));
  ASSERT_TRUE((*cache)->Flush());
  EXPECT_EQ(ReadRange(**f, 40960, 8192), Slice(fx.bytes, 40960, 8192));
  EXPECT_FALSE((*cache)->writer().idle());
  ASSERT_TRUE((*cache)->Flush());
  EXPECT_TRUE((*cache)->writer().idle());
  EXPECT_EQ((*cache)->writer().queued_bytes(), 0u);
  auto other_origin = std::make_shared<MemoryOrigin>(fx.bytes);
  auto other = Cache::Create(fx.config);
  ASSERT_TRUE(other);
  auto g = (*other)->Open(kUrl, other_origin);
  ASSERT_TRUE(g);
  EXPECT_EQ(ReadRange(**g, 40960, 8192), Slice(fx.bytes, 40960, 8192));
  EXPECT_EQ(other_origin->read_calls(), 0u);
}

TEST(CacheTest, FragmentsGrowIntoFullPages) {
  Fixture fx;
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f);
  // Three reads inside page 10, then one spanning it: the page ends up whole.
  const uint64_t p = 10 * 4096;
  EXPECT_EQ(ReadRange(**f, p + 100, 50), Slice(fx.bytes, p + 100, 50));
  ASSERT_TRUE((*cache)->Flush());
  EXPECT_EQ(ReadRange(**f, p + 1000, 50), Slice(fx.bytes, p + 1000, 50));  // bridges to 150
  ASSERT_TRUE((*cache)->Flush());
  EXPECT_EQ(ReadRange(**f, p + 120, 900), Slice(fx.bytes, p + 120, 900));  // held: a hit
  EXPECT_EQ(fx.origin->read_calls(), 2u);
  EXPECT_EQ(ReadRange(**f, p - 10, 4200), Slice(fx.bytes, p - 10, 4200));
  ASSERT_TRUE((*cache)->Flush());
  const uint64_t calls = fx.origin->read_calls();
  EXPECT_EQ(ReadRange(**f, p, 4096), Slice(fx.bytes, p, 4096));
  EXPECT_EQ(fx.origin->read_calls(), calls);
  auto index = LoadIndex(PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl))).idx());
  ASSERT_TRUE(index);
  EXPECT_TRUE(index->full(10));
  // Last page (short) and end of file.
  const uint64_t size = fx.bytes.size();
  EXPECT_EQ(ReadRange(**f, size - 5000, 5000), Slice(fx.bytes, size - 5000, 5000));
  ASSERT_TRUE((*cache)->Flush());
  EXPECT_EQ(ReadRange(**f, size - 123, 123), Slice(fx.bytes, size - 123, 123));
  std::vector<uint8_t> past(10);
  EXPECT_FALSE((*f)->Read(size - 5, past));
}

TEST(CacheTest, PiecesOfAPageStoredOutOfOrderComeTogether) {
  // A page keeps one fragment. Concurrent fetches that end in one page (an application's reads
  // of a file's header and the metadata prefetch beside it) are stored in the order they end;
  // a piece disjoint from what the page holds waits in memory (the shorter of the two) until
  // the bytes between arrive. In every order, the three come together into a whole page.
  Fixture fx;
  ASSERT_TRUE(Cache::Create(fx.config));  // prepares the directory
  Counters counters;
  Entry e(fx.config, counters, EntryKey(*NormalizeUrl(kUrl)), kUrl);
  auto opened = e.Open(*fx.origin, [] { return true; });
  ASSERT_TRUE(opened) << opened.error().ToString();
  auto fetched = [&](uint64_t off, uint64_t len) {
    const std::vector<fetch::Range> chunks{{off, len}};
    auto f = std::make_shared<Fetch>(chunks);
    std::memcpy(f->ChunkBuffer(0).data(), fx.bytes.data() + off, len);
    f->SetStatus(0, OkStatus());
    f->Finish();
    return f;
  };
  Status why;
  if (!e.TryLockForWrite(why)) {
    FAIL() << "the entry's write lock: " << why.error().ToString();
  }
  std::vector<uint8_t> scratch;
  // Every order of the three: the held piece may be the shorter one when a longer one arrives.
  std::vector<std::pair<uint64_t, uint64_t>> pieces = {{0, 100}, {100, 180}, {280, 4096 - 280}};
  uint64_t page = 10;
  do {
    const uint64_t p = page * 4096;
    for (const auto& [off, len] : pieces) {
      EXPECT_TRUE(e.Store(*fetched(p + off, len), scratch));
    }
    {
      ReaderLock lock(e.mu());
      EXPECT_TRUE(e.index().full(page))
          << "order " << pieces[0].first << ", " << pieces[1].first << ", " << pieces[2].first;
    }
    ++page;
  } while (std::next_permutation(pieces.begin(), pieces.end()));
  e.UnlockForWrite();
}

TEST(CacheTest, CorruptPageIsDetectedRefetchedAndCounted) {
  Fixture fx;
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f);
  const uint64_t off = 40 * 4096;
  EXPECT_EQ(ReadRange(**f, off, 3 * 4096), Slice(fx.bytes, off, 3 * 4096));  // 3 full pages
  EXPECT_EQ(ReadRange(**f, off + 20 * 4096 + 7, 100), Slice(fx.bytes, off + 20 * 4096 + 7, 100));
  ASSERT_TRUE((*cache)->Flush());
  const EntryPaths paths = PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl)));
  // Flip one bit in the middle page of the data file and one in the fragment, where it is
  // read: its copy in the data file.
  {
    Fd data = *Fd::Open(paths.data(), O_RDWR);
    for (uint64_t at : {off + 4096 + 77, off + 20 * 4096 + 7 + 3}) {
      uint8_t b = 0;
      ASSERT_TRUE(PreadFull(data.get(), &b, 1, at));
      b ^= 0x10;
      ASSERT_TRUE(PwriteFull(data.get(), &b, 1, at));
    }
  }
  const uint64_t calls = fx.origin->read_calls();
  EXPECT_EQ(ReadRange(**f, off, 3 * 4096), Slice(fx.bytes, off, 3 * 4096));
  EXPECT_EQ(ReadRange(**f, off + 20 * 4096 + 7, 100), Slice(fx.bytes, off + 20 * 4096 + 7, 100));
  EXPECT_EQ((*cache)->counters().Get(Counter::kCrcFailures), 2u);
  EXPECT_EQ(fx.origin->read_calls(), calls + 2);
  ASSERT_TRUE((*cache)->Flush());
  // Repaired: served from the cache again, no more failures.
  EXPECT_EQ(ReadRange(**f, off, 3 * 4096), Slice(fx.bytes, off, 3 * 4096));
  EXPECT_EQ(ReadRange(**f, off + 20 * 4096 + 7, 100), Slice(fx.bytes, off + 20 * 4096 + 7, 100));
  EXPECT_EQ(fx.origin->read_calls(), calls + 2);
  EXPECT_EQ((*cache)->counters().Get(Counter::kCrcFailures), 2u);
  EXPECT_EQ((*cache)->counters().Get(Counter::kFailopenEvents), 0u);
}

TEST(CacheTest, CorruptIndexFailsOpenThenRecreates) {
  Fixture fx;
  {
    auto cache = Cache::Create(fx.config);
    auto f = (*cache)->Open(kUrl, fx.origin);
    ReadRange(**f, 0, 10000);
  }
  const EntryPaths paths = PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl)));
  {
    Fd idx = *Fd::Open(paths.idx(), O_RDWR);
    uint8_t junk[4] = {1, 2, 3, 4};
    ASSERT_TRUE(PwriteFull(idx.get(), junk, 4, 200));
  }
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f);
  EXPECT_TRUE((*f)->pass_through());
  EXPECT_EQ(ReadRange(**f, 5, 9000), Slice(fx.bytes, 5, 9000));
  EXPECT_EQ((*cache)->counters().Get(Counter::kFailopenEvents), 1u);
  (*f)->Close();
  auto g = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(g);
  EXPECT_FALSE((*g)->pass_through());
  EXPECT_EQ(ReadRange(**g, 5, 9000), Slice(fx.bytes, 5, 9000));
}

TEST(CacheTest, TransientOriginErrorsAreRetried) {
  Fixture fx;
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f);
  fx.origin->FailNextReads(2, ErrorCode::kIo);
  EXPECT_EQ(ReadRange(**f, 1000, 50000), Slice(fx.bytes, 1000, 50000));
  EXPECT_EQ((*cache)->counters().Get(Counter::kRetries), 2u);
  // More failures than retries: the origin's error reaches the caller, nothing is cached.
  fx.origin->FailNextReads(10, ErrorCode::kIo);
  std::vector<uint8_t> buf(100);
  Status st = (*f)->Read(500000, buf);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kIo);
  // A final error (not transient) is not retried.
  fx.origin->FailNextReads(1, ErrorCode::kPermission);
  st = (*f)->Read(600000, buf);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kPermission);
  fx.origin->FailNextReads(0);
  EXPECT_EQ(ReadRange(**f, 500000, 100), Slice(fx.bytes, 500000, 100));
  EXPECT_FALSE((*f)->pass_through());
}

TEST(CacheTest, OriginErrorAtOpenIsTheOriginsError) {
  Fixture fx;
  auto cache = Cache::Create(fx.config);
  fx.origin->FailStat(ErrorCode::kNotFound);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code(), ErrorCode::kNotFound);
  fx.origin->ClearStatFailure();
  EXPECT_TRUE((*cache)->Open(kUrl, fx.origin));
}

TEST(CacheTest, ChangedOriginRecreatesEntry) {
  Fixture fx;
  fx.config.revalidate_s = 0;  // check on every open
  {
    auto cache = Cache::Create(fx.config);
    auto f = (*cache)->Open(kUrl, fx.origin);
    EXPECT_EQ(ReadRange(**f, 0, 8192), Slice(fx.bytes, 0, 8192));
  }
  std::vector<uint8_t> v2 = testing::PseudoRandomBytes(100000, 99);
  auto origin2 = std::make_shared<MemoryOrigin>(v2, 1800000000);
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, origin2);
  ASSERT_TRUE(f);
  EXPECT_EQ((*f)->size(), v2.size());
  EXPECT_EQ(ReadRange(**f, 0, 8192), Slice(v2, 0, 8192));
}

TEST(CacheTest, InvalidateMakesHandlesPassThrough) {
  Fixture fx;
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ReadRange(**f, 0, 8192);
  ASSERT_TRUE((*cache)->Flush());
  ASSERT_TRUE((*cache)->Invalidate(kUrl));
  EXPECT_TRUE((*f)->pass_through());
  EXPECT_EQ(ReadRange(**f, 0, 8192), Slice(fx.bytes, 0, 8192));
  const EntryPaths paths = PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl)));
  EXPECT_EQ(StampOf(paths.idx()).ino, 0u);
}

TEST(CacheTest, LockTimeoutFailsOpen) {
  Fixture fx;
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f);
  const EntryPaths paths = PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl)));
  auto other = LockFile::Open(paths.lock());  // another "process" holds the write lock
  ASSERT_TRUE(other->Lock(kWriteLockByte, true, 0));
  EXPECT_EQ(ReadRange(**f, 0, 20000), Slice(fx.bytes, 0, 20000));
  (*cache)->Flush();
  EXPECT_TRUE((*f)->pass_through());
  EXPECT_EQ((*cache)->counters().Get(Counter::kFailopenEvents), 1u);
  EXPECT_EQ(ReadRange(**f, 0, 20000), Slice(fx.bytes, 0, 20000));
}

// A reader that outruns the write-behind (writeback_wait_ms): its fetch waits for room in the
// queue instead of being dropped. Here the writer cannot store at all while another "process"
// holds the entry's write lock, the queue fills with two misses, and the third miss waits until
// the lock is let go; nothing is dropped and every byte read is held.
TEST(CacheTest, AFetchWaitsForRoomInTheWriteBehindQueue) {
  constexpr uint64_t kQueue = 64 << 10;
  constexpr size_t kRead = 32 << 10;
  Fixture fx;
  fx.config.writeback_bytes = kQueue;
  fx.config.writeback_wait_ms = 60000;
  fx.config.lock_timeout_ms = 60000;
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f);
  const EntryPaths paths = PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl)));
  auto other = LockFile::Open(paths.lock());
  ASSERT_TRUE(other->Lock(kWriteLockByte, true, 0));
  constexpr uint64_t kStep = 1 << 20;
  std::thread reader([&] {
    for (uint64_t off = 0; off < 3 * kStep; off += kStep) {
      EXPECT_EQ(ReadRange(**f, off, kRead), Slice(fx.bytes, off, kRead));
    }
  });
  for (int i = 0; i < 60000 && (*cache)->writer().queued_bytes() < kQueue; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ((*cache)->writer().queued_bytes(), kQueue) << "two misses fill the queue";
  ASSERT_TRUE(other->Unlock(kWriteLockByte));
  reader.join();
  ASSERT_TRUE((*cache)->Flush());
  EXPECT_EQ((*cache)->counters().Get(Counter::kWritesDropped), 0u);
  const uint64_t calls = fx.origin->read_calls();
  for (uint64_t off = 0; off < 3 * kStep; off += kStep) {
    EXPECT_EQ(ReadRange(**f, off, kRead), Slice(fx.bytes, off, kRead));
  }
  EXPECT_EQ(fx.origin->read_calls(), calls) << "all three held";
}

// A writer that makes no room within writeback_wait_ms (a stuck disk): that fetch is dropped,
// and so is the next one, without a wait of its own; the reader gets its bytes all along.
TEST(CacheTest, AStuckWriteBehindCostsOneWait) {
  constexpr uint64_t kQueue = 64 << 10;
  constexpr size_t kRead = 32 << 10;
  Fixture fx;
  fx.config.writeback_bytes = kQueue;
  fx.config.writeback_wait_ms = 20;
  fx.config.lock_timeout_ms = 60000;
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f);
  const EntryPaths paths = PathsFor(fx.config.dir, EntryKey(*NormalizeUrl(kUrl)));
  auto other = LockFile::Open(paths.lock());
  ASSERT_TRUE(other->Lock(kWriteLockByte, true, 0));
  constexpr uint64_t kStep = 512 << 10;
  for (uint64_t off = 0; off < 4 * kStep; off += kStep) {
    EXPECT_EQ(ReadRange(**f, off, kRead), Slice(fx.bytes, off, kRead));
  }
  EXPECT_EQ((*cache)->counters().Get(Counter::kWritesDropped), 2u);
  ASSERT_TRUE(other->Unlock(kWriteLockByte));
  ASSERT_TRUE((*cache)->Flush());
}

TEST(CacheTest, AdmissionDeclinedWhenFullAndNothingEvictable) {
  Fixture fx;
  fx.config.max_bytes = 64 * 1024;
  // The capacity re-check waits an interval; an injected clock passes it without sleeping.
  auto now = std::make_shared<std::atomic<int64_t>>(NowNs());
  fx.config.clock_ns = [now] {
    return now->load();
  };
  auto cache = Cache::Create(fx.config);
  auto a = (*cache)->Open("root://h//a", fx.origin);
  ASSERT_TRUE(a);
  ReadRange(**a, 0, 1 << 20);
  ASSERT_TRUE((*cache)->Flush());
  // "a" is open (not evictable) and the cache is over its cap: "b" is declined.
  auto b = (*cache)->Open("root://h//b", fx.origin);
  ASSERT_TRUE(b);
  EXPECT_TRUE((*b)->pass_through());
  EXPECT_EQ(ReadRange(**b, 10, 1000), Slice(fx.bytes, 10, 1000));
  EXPECT_EQ((*cache)->counters().Get(Counter::kAdmissionsDeclined), 1u);
  // Once "a" is closed it can be evicted and "c" is admitted.
  (*a)->Close();
  ASSERT_TRUE((*cache)->Flush());
  now->fetch_add(2'100'000'000);  // past the capacity re-check interval
  auto c = (*cache)->Open("root://h//c", fx.origin);
  ASSERT_TRUE(c);
  EXPECT_FALSE((*c)->pass_through());
  EXPECT_EQ((*cache)->counters().Get(Counter::kEvictions), 1u);
}

TEST(CacheTest, ConcurrentVectorReadsSpreadOverChannels) {
  Fixture fx;
  fx.config.max_request_bytes = 64 * 1024;  // a 1 MiB miss becomes 16 vector reads
  auto origin = std::make_shared<MemoryOrigin>(fx.bytes, 1700000000, /*channels=*/3);
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, origin);
  ASSERT_TRUE(f);
  EXPECT_EQ(ReadRange(**f, 0, 1 << 20), Slice(fx.bytes, 0, 1 << 20));
  EXPECT_EQ(origin->read_calls(), 16u);
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_GE(origin->channel_calls(c), 5u) << "channel " << c;
  }
  // One small read at a time stays on channel 0.
  const uint64_t before = origin->channel_calls(0);
  EXPECT_EQ(ReadRange(**f, 2 << 20, 1000), Slice(fx.bytes, 2 << 20, 1000));
  EXPECT_EQ(origin->channel_calls(0), before + 1);
}

TEST(CacheTest, HitsDoNotAllocate) {
  Fixture fx;
  auto cache = Cache::Create(fx.config);
  auto f = (*cache)->Open(kUrl, fx.origin);
  auto pattern = SparsePattern(fx.bytes.size(), 64, 5);
  std::vector<std::vector<uint8_t>> got;
  ASSERT_TRUE(ReadPattern(**f, pattern, got));
  ASSERT_TRUE((*cache)->Flush());
  std::vector<io::ReadRequest> reqs(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    reqs[i] = {pattern[i].first, got[i], {}};
  }
  ASSERT_TRUE((*f)->ReadV(reqs));  // warm the thread's scratch
  ASSERT_TRUE((*f)->AllHeld(reqs));
  const uint64_t before = g_allocations.load();
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE((*f)->AllHeld(reqs));
    ASSERT_TRUE((*f)->ReadV(reqs));
  }
  EXPECT_EQ(g_allocations.load(), before);
  for (size_t i = 0; i < pattern.size(); ++i) {
    ASSERT_EQ(got[i], Slice(fx.bytes, pattern[i].first, pattern[i].second));
  }
}

}  // namespace
}  // namespace ferry::cache
