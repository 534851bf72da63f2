// The byte tier's warm read path: a range read once is read back with one pread of the data
// file (its edge fragments are kept there too), an entry written before that still reads, and
// the zero-copy answer (CachedFile::ZeroCopyFd) covers only bytes held and verified, and a process
// that serves zero-copy reads what it verified back unchecked, as sendfile would send it.
#include <fcntl.h>
#include <unistd.h>

#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "base/fd.h"
#include "cache/cache.h"
#include "cache/entry_store.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

constexpr const char* kUrl = "root://origin.example:1094//data/warm.root";

struct Fixture {
  testing::TempDir dir;
  std::vector<uint8_t> bytes = testing::PseudoRandomBytes(2 * 1024 * 1024 + 77, 3);
  std::shared_ptr<MemoryOrigin> origin = std::make_shared<MemoryOrigin>(bytes);
  Config config = testing::CacheTestConfig(dir.path() + "/cache");
  EntryPaths paths() const { return PathsFor(config.dir, EntryKey(*NormalizeUrl(kUrl))); }
};

OpenOptions ZeroCopy() {
  OpenOptions o;
  o.zero_copy = true;
  return o;
}

struct Range {
  uint64_t offset;
  size_t length;
};

// 48 chunks of 2-16 KiB at random places, one per slot (bench/cache_wan's shape).
std::vector<Range> Pattern(uint64_t size) {
  std::mt19937_64 rng(5);
  std::vector<Range> out;
  const uint64_t slot = size / 48;
  for (uint64_t i = 0; i < 48; ++i) {
    const size_t len = 2048 + rng() % (16384 - 2048);
    out.push_back({i * slot + rng() % (slot - len), len});
  }
  return out;
}

// Reads every range with one vector read and checks the bytes.
void ReadAndCheck(CachedFile& f, const std::vector<Range>& ranges, const Fixture& fx) {
  std::vector<std::vector<uint8_t>> bufs(ranges.size());
  std::vector<io::ReadRequest> reqs;
  for (size_t i = 0; i < ranges.size(); ++i) {
    bufs[i].resize(ranges[i].length);
    reqs.push_back({ranges[i].offset, bufs[i], {}});
  }
  ASSERT_TRUE(f.ReadV(reqs));
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto at = fx.bytes.begin() + static_cast<long>(ranges[i].offset);
    ASSERT_TRUE(std::equal(bufs[i].begin(), bufs[i].end(), at)) << i;
  }
}

// What the data file holds at a range, read through a descriptor ZeroCopyFd gave.
std::vector<uint8_t> PreadAt(int fd, const Range& r) {
  std::vector<uint8_t> out(r.length);
  EXPECT_TRUE(PreadFull(fd, out.data(), out.size(), r.offset));
  return out;
}

std::vector<uint8_t> Expected(const Fixture& fx, const Range& r) {
  const auto at = fx.bytes.begin() + static_cast<long>(r.offset);
  return {at, at + static_cast<long>(r.length)};
}

TEST(WarmReadTest, ARangeReadOnceIsReadBackWithOnePread) {
  Fixture fx;
  auto cache = *Cache::Create(fx.config);
  auto f = *cache->Open(kUrl, fx.origin);
  const std::vector<Range> ranges = Pattern(fx.bytes.size());
  ReadAndCheck(*f, ranges, fx);
  ASSERT_TRUE(cache->Flush());
  const uint64_t origin_bytes = fx.origin->bytes();
  const uint64_t before = cache->counters().Get(Counter::kDiskReads);
  ReadAndCheck(*f, ranges, fx);
  EXPECT_EQ(cache->counters().Get(Counter::kDiskReads) - before, ranges.size());
  EXPECT_EQ(fx.origin->bytes(), origin_bytes);
  EXPECT_EQ(cache->counters().Get(Counter::kCrcFailures), 0u);
}

// An entry whose fragments are in the fragment log (written before fragments went into the data
// file: its index is version 1 and the data file has holes there) reads as before.
TEST(WarmReadTest, AnEntryWithFragmentsOnlyInTheLogStillReads) {
  Fixture fx;
  const std::vector<Range> ranges = Pattern(fx.bytes.size());
  {
    auto cache = *Cache::Create(fx.config);
    auto f = *cache->Open(kUrl, fx.origin);
    ReadAndCheck(*f, ranges, fx);
    f->Close();
    ASSERT_TRUE(cache->Flush());
  }
  auto index = LoadIndex(fx.paths().idx());
  ASSERT_TRUE(index);
  {
    // Each fragment moved to the log, as an older ferry kept it.
    Fd data = *Fd::Open(fx.paths().data(), O_RDWR);
    Fd frag_log = *Fd::Open(fx.paths().frag(), O_RDWR);
    std::vector<std::pair<uint64_t, Fragment>> frags(index->fragments().begin(),
                                                     index->fragments().end());
    ASSERT_FALSE(frags.empty());
    uint64_t log_end = 0;
    for (auto& [page, frag] : frags) {
      ASSERT_TRUE(frag.in_data);
      const uint64_t at = page * 4096 + frag.lo;
      ASSERT_TRUE(PwriteFull(frag_log.get(), fx.bytes.data() + at, frag.length(), log_end));
      const std::vector<uint8_t> zeros(frag.length(), 0);
      ASSERT_TRUE(PwriteFull(data.get(), zeros.data(), zeros.size(), at));
      frag.in_data = false;
      frag.offset = log_end;
      log_end += frag.length();
      index->SetFragment(page, frag);
    }
    index->mutable_info().frag_bytes = log_end;
  }
  std::vector<uint8_t> scratch;
  ASSERT_TRUE(PublishIndex(fx.paths(), *index, /*sync=*/false, scratch));
  auto cache = *Cache::Create(fx.config);  // another process
  auto f = *cache->Open(kUrl, fx.origin);
  const uint64_t origin_bytes = fx.origin->bytes();
  ReadAndCheck(*f, ranges, fx);
  EXPECT_EQ(fx.origin->bytes(), origin_bytes);
  EXPECT_EQ(cache->counters().Get(Counter::kCrcFailures), 0u);
  EXPECT_GT(cache->counters().Get(Counter::kDiskReads), ranges.size());
}

TEST(WarmReadTest, ZeroCopyOnlyForBytesHeldAndVerifiedByThisProcess) {
  Fixture fx;
  const Range a{100 * 4096 + 123, 20000};
  const Range wider{a.offset, a.length + 9000};
  const Range never{300 * 4096 + 5, 10000};
  {
    auto cache = *Cache::Create(fx.config);
    auto f = *cache->Open(kUrl, fx.origin, ZeroCopy());
    ReadAndCheck(*f, {a}, fx);
    ASSERT_TRUE(cache->Flush());
    ReadAndCheck(*f, {a}, fx);  // read back from the data file: verified
    const int fd = f->ZeroCopyFd(a.offset, a.length);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(PreadAt(fd, a), Expected(fx, a));
    EXPECT_EQ(f->ZeroCopyFd(wider.offset, wider.length), -1);  // partly missing
    EXPECT_EQ(f->ZeroCopyFd(never.offset, never.length), -1);
    // The marks outlive the handle: a later open of the entry sends at once.
    f->Close();
    f = *cache->Open(kUrl, fx.origin, ZeroCopy());
    EXPECT_GE(f->ZeroCopyFd(a.offset, a.length), 0);
  }
  {
    // A process whose handles do not ask for zero-copy tracks nothing and never sends.
    auto cache = *Cache::Create(fx.config);
    auto plain = *cache->Open(kUrl, fx.origin);
    ReadAndCheck(*plain, {a}, fx);
    ReadAndCheck(*plain, {a}, fx);
    EXPECT_EQ(plain->ZeroCopyFd(a.offset, a.length), -1);
  }
  // Another process verified nothing yet; a page corrupted on disk is caught by its read,
  // refetched, and sent only once its new bytes were read back and checked.
  {
    Fd data = *Fd::Open(fx.paths().data(), O_RDWR);
    uint8_t b = 0;
    ASSERT_TRUE(PreadFull(data.get(), &b, 1, a.offset + 5000));
    b ^= 0x20;
    ASSERT_TRUE(PwriteFull(data.get(), &b, 1, a.offset + 5000));
  }
  auto cache = *Cache::Create(fx.config);
  auto f = *cache->Open(kUrl, fx.origin, ZeroCopy());
  EXPECT_EQ(f->ZeroCopyFd(a.offset, a.length), -1);
  ReadAndCheck(*f, {a}, fx);
  EXPECT_EQ(cache->counters().Get(Counter::kCrcFailures), 1u);
  EXPECT_EQ(f->ZeroCopyFd(a.offset, a.length), -1);  // the page dropped: not held
  ASSERT_TRUE(cache->Flush());
  ReadAndCheck(*f, {a}, fx);
  const int fd = f->ZeroCopyFd(a.offset, a.length);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(PreadAt(fd, a), Expected(fx, a));
}

// Flips one bit of the data file at `at`: a page damaged on disk.
void DamageDataFile(const Fixture& fx, uint64_t at) {
  Fd data = *Fd::Open(fx.paths().data(), O_RDWR);
  uint8_t b = 0;
  ASSERT_TRUE(PreadFull(data.get(), &b, 1, at));
  b ^= 0x20;
  ASSERT_TRUE(PwriteFull(data.get(), &b, 1, at));
}

// A process that serves zero-copy reads a range whose pages it verified since they last changed
// with one pread of exactly its bytes and no check: the rule sendfile follows, under which a
// page damaged on disk after the check is sent as it is (docs/format/page-store.md). A range
// touching a page it has not verified is checked, and a process without zero-copy checks every
// read.
TEST(WarmReadTest, PagesVerifiedByThisProcessAreReadBackUnchecked) {
  Fixture fx;
  const Range a{100 * 4096 + 123, 20000};
  const Range b{200 * 4096 + 77, 9000};
  auto cache = *Cache::Create(fx.config);
  auto f = *cache->Open(kUrl, fx.origin, ZeroCopy());
  ReadAndCheck(*f, {a, b}, fx);
  ASSERT_TRUE(cache->Flush());
  ReadAndCheck(*f, {a}, fx);  // a read back and checked; b not yet
  DamageDataFile(fx, a.offset + 5000);
  DamageDataFile(fx, b.offset + 100);

  const uint64_t reads = cache->counters().Get(Counter::kDiskReads);
  std::vector<uint8_t> got(a.length);
  ASSERT_TRUE(f->Read(a.offset, got));
  std::vector<uint8_t> as_on_disk = Expected(fx, a);
  as_on_disk[5000] ^= 0x20;
  EXPECT_EQ(got, as_on_disk);
  EXPECT_EQ(cache->counters().Get(Counter::kDiskReads) - reads, 1u);
  EXPECT_EQ(cache->counters().Get(Counter::kCrcFailures), 0u);

  const uint64_t origin_bytes = fx.origin->bytes();
  ReadAndCheck(*f, {b}, fx);  // never verified: checked, caught, fetched again
  EXPECT_EQ(cache->counters().Get(Counter::kCrcFailures), 1u);
  EXPECT_GT(fx.origin->bytes(), origin_bytes);

  auto other = *Cache::Create(fx.config);  // the client plug-in's process: no zero-copy
  auto g = *other->Open(kUrl, fx.origin);
  ReadAndCheck(*g, {a}, fx);
  EXPECT_EQ(other->counters().Get(Counter::kCrcFailures), 1u);
}

}  // namespace
}  // namespace ferry::cache
