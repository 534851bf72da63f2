// Eviction by inodes: a cap on entries and a free-inode floor keep a cache of many small files
// serving, on a file system whose inode table fills long before its disk.
#include <sys/mount.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "cache/cache.h"
#include "cache/capacity.h"
#include "cache/entry_store.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

Config SmallFileConfig(const std::string& dir) {
  Config c;
  c.dir = dir;
  c.min_free_bytes = 0;
  c.sync = false;
  c.publish_ms = 10;
  c.readahead = false;
  return c;
}

// Reads small file `n` whole through `cache` and checks its bytes. True when it was cached
// (not read through).
bool ReadSmall(Cache& cache, int n) {
  const std::vector<uint8_t> bytes = testing::PseudoRandomBytes(6000, static_cast<uint64_t>(n));
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  auto f = cache.Open("root://h//small/" + std::to_string(n), origin);
  EXPECT_TRUE(f) << n;
  if (!f) {
    return false;
  }
  std::vector<uint8_t> buf(bytes.size());
  EXPECT_TRUE((*f)->Read(0, buf)) << n;
  EXPECT_EQ(buf, bytes) << n;
  const bool cached = !(*f)->pass_through();
  (*f)->Close();
  EXPECT_TRUE(cache.Flush());
  return cached;
}

bool Present(const Config& c, int n) {
  const std::string key = EntryKey(*NormalizeUrl("root://h//small/" + std::to_string(n)));
  return StampOf(PathsFor(c.dir, key).idx()).ino != 0;
}

TEST(InodeLimitTest, EntryCapEvictsLeastRecentlyRead) {
  testing::TempDir tmp;
  Config c = SmallFileConfig(tmp.path() + "/c");
  c.max_entries = 10;
  auto cache = *Cache::Create(c);
  for (int n = 0; n < 40; ++n) {
    EXPECT_TRUE(ReadSmall(*cache, n)) << "file " << n << " was not cached";
    EXPECT_LE(MeasureUsage(c.dir)->listed, 10u) << "after file " << n;
  }
  EXPECT_GE(cache->counters().Get(Counter::kEvictions), 30u);
  EXPECT_EQ(cache->counters().Get(Counter::kFailopenEvents), 0u);
  EXPECT_TRUE(Present(c, 39));  // the newest stay
  EXPECT_FALSE(Present(c, 0));  // the oldest went
}

TEST(InodeLimitTest, EvictTargetsCountAndFloor) {
  testing::TempDir tmp;
  Config c = SmallFileConfig(tmp.path() + "/c");
  auto cache = *Cache::Create(c);
  for (int n = 0; n < 5; ++n) {
    ReadSmall(*cache, n);
  }
  const Usage before = *MeasureUsage(c.dir);
  EXPECT_EQ(before.listed, 5u);
  EXPECT_GE(before.inodes, 5u * 3);  // index, data and lock at least
  EvictOptions o;
  o.target_entries = 3;
  auto r = Evict(c.dir, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->evicted, 2u);
  EXPECT_EQ(r->after.listed, 3u);
  EXPECT_FALSE(r->still_over);
  // A floor no file system here can meet: everything that is not open goes, and it says so.
  o = EvictOptions{};
  o.min_free_inodes = UINT64_MAX - 1;
  r = Evict(c.dir, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->after.listed, 0u);
  EXPECT_TRUE(r->still_over);
}

// The mount point of a tmpfs with few inodes, unmounted at the end; skipped without the right to
// mount (not root, or no CAP_SYS_ADMIN in this namespace).
class SmallTmpfs {
 public:
  explicit SmallTmpfs(int inodes) {
    const std::string opts = "size=64m,nr_inodes=" + std::to_string(inodes);
    mounted_ = ::mount("ferry-inodes", tmp_.path().c_str(), "tmpfs", 0, opts.c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (mounted_) {
      ::umount2(tmp_.path().c_str(), MNT_DETACH);
    }
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& path() const { return tmp_.path(); }

 private:
  testing::TempDir tmp_;
  bool mounted_ = false;
};

// 400 small files through a cache on a file system of 400 inodes: without the floor the inode
// table fills after ~80 files and every later file fails open. With it, old entries are
// evicted, new files are cached, and the file system never runs out.
TEST(InodeLimitTest, InodeFullFileSystemKeepsServing) {
  SmallTmpfs fs(400);
  if (!fs.mounted()) {
    GTEST_SKIP() << "cannot mount a tmpfs here";
  }
  Config c = SmallFileConfig(fs.path() + "/c");
  c.min_free_inodes = 60;
  auto cache = *Cache::Create(c);
  int cached = 0;
  for (int n = 0; n < 400; ++n) {
    cached += ReadSmall(*cache, n) ? 1 : 0;
    ASSERT_GT(*FreeInodes(c.dir), 0u) << "after file " << n;
  }
  Counters& k = cache->counters();
  EXPECT_EQ(k.Get(Counter::kFailopenEvents), 0u);
  EXPECT_GE(k.Get(Counter::kEvictions), 200u);
  EXPECT_GE(cached, 380) << "declined: " << k.Get(Counter::kAdmissionsDeclined);
  EXPECT_TRUE(Present(c, 399));
  EXPECT_GE(*FreeInodes(c.dir), 50u);
}

}  // namespace
}  // namespace ferry::cache
