#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "cache/cache.h"
#include "cache/capacity.h"
#include "cache/conf_file.h"
#include "cache/entry_store.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

struct Dir {
  testing::TempDir tmp;
  Config config;
  std::vector<uint8_t> bytes = testing::PseudoRandomBytes(256 * 1024, 3);
  Dir() {
    config.dir = tmp.path() + "/c";
    config.min_free_bytes = 0;
    config.sync = false;
    config.publish_ms = 10;
  }
  // Fills entry `name` with 64 KiB and closes it.
  void Fill(Cache& cache, const std::string& name) {
    auto origin = std::make_shared<MemoryOrigin>(bytes);
    auto f = cache.Open("root://h//" + name, origin);
    ASSERT_TRUE(f);
    std::vector<uint8_t> buf(64 * 1024);
    ASSERT_TRUE((*f)->Read(0, buf));
    (*f)->Close();
    ASSERT_TRUE(cache.Flush());
  }
  std::string Key(const std::string& name) { return EntryKey(*NormalizeUrl("root://h//" + name)); }
  bool Present(const std::string& name) {
    return StampOf(PathsFor(config.dir, Key(name)).idx()).ino != 0;
  }
  // Sets the last-read time of entry `name` (the mtimes of its lock file and index, see
  // capacity.h) to `unix_s`: distinct times without waiting for the clock to move.
  void SetLastRead(const std::string& name, time_t unix_s) {
    const EntryPaths p = PathsFor(config.dir, Key(name));
    struct timespec times[2] = {{unix_s, 0}, {unix_s, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, p.lock().c_str(), times, 0), 0);
    ASSERT_EQ(::utimensat(AT_FDCWD, p.idx().c_str(), times, 0), 0);
  }
};

TEST(EvictionTest, LeastRecentlyReadGoesFirst) {
  Dir d;
  auto cache = *Cache::Create(d.config);
  for (const char* n : {"a", "b", "c"}) {
    d.Fill(*cache, n);
  }
  // Last read in 2001 in the order a, b, c; then a is read again, which makes it the most
  // recently read: b must go first.
  d.SetLastRead("a", 1'000'000'000);
  d.SetLastRead("b", 1'000'000'001);
  d.SetLastRead("c", 1'000'000'002);
  d.Fill(*cache, "a");
  auto usage = MeasureUsage(d.config.dir);
  ASSERT_TRUE(usage);
  EXPECT_EQ(usage->entries, 3u);
  EvictOptions o;
  o.target_bytes = usage->disk_bytes - 1;  // one entry must go
  auto r = Evict(d.config.dir, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->evicted, 1u);
  EXPECT_TRUE(d.Present("a"));
  EXPECT_FALSE(d.Present("b"));
  EXPECT_TRUE(d.Present("c"));
  EXPECT_FALSE(r->still_over);
}

TEST(EvictionTest, OpenAndPinnedEntriesStay) {
  Dir d;
  auto cache = *Cache::Create(d.config);
  d.Fill(*cache, "pinned");
  d.Fill(*cache, "closed");
  auto origin = std::make_shared<MemoryOrigin>(d.bytes);
  auto open = cache->Open("root://h//open", origin);
  std::vector<uint8_t> buf(4096);
  ASSERT_TRUE((*open)->Read(0, buf));
  ASSERT_TRUE(cache->Flush());
  { Fd pin = *Fd::Open(PathsFor(d.config.dir, d.Key("pinned")).pin(), O_WRONLY | O_CREAT); }
  EvictOptions o;
  o.everything = true;
  auto r = Evict(d.config.dir, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->evicted, 1u);
  EXPECT_EQ(r->skipped_open, 1u);
  EXPECT_EQ(r->skipped_pinned, 1u);
  EXPECT_TRUE(d.Present("pinned"));
  EXPECT_TRUE(d.Present("open"));
  EXPECT_FALSE(d.Present("closed"));
  // The open handle keeps working and its entry keeps filling.
  ASSERT_TRUE((*open)->Read(8192, buf));
  EXPECT_FALSE((*open)->pass_through());
  (*open)->Close();
  ASSERT_TRUE(cache->Flush());
  o.include_pinned = true;
  r = Evict(d.config.dir, o);
  EXPECT_EQ(r->evicted, 2u);
  EXPECT_EQ(r->after.entries, 0u);
}

TEST(EvictionTest, OlderThan) {
  Dir d;
  auto cache = *Cache::Create(d.config);
  d.Fill(*cache, "old");
  const EntryPaths p = PathsFor(d.config.dir, d.Key("old"));
  struct timespec times[2] = {{1000000000, 0}, {1000000000, 0}};  // 2001
  ASSERT_EQ(::utimensat(AT_FDCWD, p.lock().c_str(), times, 0), 0);
  ASSERT_EQ(::utimensat(AT_FDCWD, p.idx().c_str(), times, 0), 0);
  d.Fill(*cache, "new");
  EvictOptions o;
  o.older_than_s = 3600;
  auto r = Evict(d.config.dir, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->evicted, 1u);
  EXPECT_FALSE(d.Present("old"));
  EXPECT_TRUE(d.Present("new"));
}

TEST(EvictionTest, ReopenAfterEvictionStartsAfresh) {
  Dir d;
  auto cache = *Cache::Create(d.config);
  d.Fill(*cache, "x");
  EvictOptions o;
  o.everything = true;
  ASSERT_EQ(Evict(d.config.dir, o)->evicted, 1u);
  auto origin = std::make_shared<MemoryOrigin>(d.bytes);
  auto f = cache->Open("root://h//x", origin);
  ASSERT_TRUE(f);
  EXPECT_FALSE((*f)->pass_through());
  std::vector<uint8_t> buf(1000);
  ASSERT_TRUE((*f)->Read(0, buf));
  EXPECT_EQ(origin->read_calls(), 1u);  // evicted: fetched again
}

// A process killed between writing KEY.idx.tmp.PID and renaming it leaves the file behind;
// only temp files of processes that no longer exist may go.
TEST(EvictionTest, StaleTempFilesOfDeadProcessesAreRemoved) {
  Dir d;
  auto cache = *Cache::Create(d.config);
  d.Fill(*cache, "t");
  const EntryPaths p = PathsFor(d.config.dir, d.Key("t"));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::_exit(0);
  }
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const std::string dead = p.idx() + ".tmp." + std::to_string(child);
  const std::string dead_manifest = p.manifest() + ".tmp." + std::to_string(child);
  const std::string own = p.idx() + ".tmp." + std::to_string(::getpid());
  const std::string odd = p.idx() + ".tmp.x1";
  for (const std::string& f : {dead, dead_manifest, own, odd}) {
    testing::WriteWholeFile(f, std::vector<uint8_t>(100, 1));
  }
  RemoveStaleTemps(p);
  EXPECT_FALSE(PathExists(dead));
  EXPECT_FALSE(PathExists(dead_manifest));
  EXPECT_TRUE(PathExists(own));  // a live writer's file stays
  EXPECT_TRUE(PathExists(odd));  // not a PID: not ours to judge
  EXPECT_TRUE(PathExists(p.idx()));
  EXPECT_TRUE(PathExists(p.data()));
}

}  // namespace
}  // namespace ferry::cache
