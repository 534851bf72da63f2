// Who may use a cache directory (dir_access.h) and the origin's word per user in a group cache
// (access_confirm.h), over the engine with a MemoryOrigin. Real accounts and a real origin with
// an authorisation database: tests/cache/test_cache_shared.py.
#include "cache/dir_access.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cache/access_confirm.h"
#include "cache/cache.h"
#include "cache/entry_store.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

constexpr const char* kUrl = "root://origin.example:1094//data/a.root";
constexpr uid_t kNobody = 65534;

mode_t ModeOf(const std::string& path) {
  struct stat st = {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Every path below `dir` (itself included) with its mode.
std::vector<std::pair<std::string, struct stat>> g_walk;
std::vector<std::pair<std::string, struct stat>> Walk(const std::string& dir) {
  g_walk.clear();
  ::nftw(
      dir.c_str(),
      [](const char* p, const struct stat* st, int, struct FTW*) {
        g_walk.emplace_back(p, *st);
        return 0;
      },
      16, FTW_PHYS);
  return g_walk;
}

// Sets the umask for one test, restored after it.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t m) : old_(::umask(m)) {}
  ~ScopedUmask() { ::umask(old_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t old_;
};

// Opens kUrl through `cache`, reads 64 KiB and waits until the pages are stored.
Status FillOnce(Cache& cache, const std::shared_ptr<MemoryOrigin>& origin) {
  auto file = FERRY_TRY(cache.Open(kUrl, origin));
  std::vector<uint8_t> out(size_t{64} * 1024);
  FERRY_TRY(file->Read(0, out));
  file->Close();
  EXPECT_TRUE(cache.Flush());
  return OkStatus();
}

std::shared_ptr<MemoryOrigin> SomeOrigin() {
  return std::make_shared<MemoryOrigin>(testing::PseudoRandomBytes(1 << 20, 3));
}

TEST(DirAccessTest, APrivateCacheIsCreated0700WithFiles0600WhateverTheUmask) {
  testing::TempDir tmp;
  ScopedUmask open_umask(0);
  const std::string dir = tmp.File("cache");
  auto cache = Cache::Create(testing::CacheTestConfig(dir));
  ASSERT_TRUE(cache) << cache.error().ToString();
  ASSERT_TRUE(FillOnce(**cache, SomeOrigin()));
  (*cache)->Shutdown();
  size_t files = 0;
  for (const auto& [path, st] : Walk(dir)) {
    const mode_t want = S_ISDIR(st.st_mode) ? 0700 : 0600;
    EXPECT_EQ(st.st_mode & 07777, want) << path;
    files += S_ISREG(st.st_mode) ? 1 : 0;
  }
  EXPECT_GE(files, 4u);  // marker, stats, and the entry's index, data and lock files at least
}

TEST(DirAccessTest, ADirectoryOthersCanReadIsRefusedBeforeAnythingIsWritten) {
  testing::TempDir tmp;
  const std::string dir = tmp.File("cache");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  auto cache = Cache::Create(testing::CacheTestConfig(dir));
  ASSERT_FALSE(cache);
  EXPECT_EQ(cache.error().code(), ErrorCode::kPermission);
  EXPECT_NE(cache.error().message().find("mode 0755"), std::string::npos)
      << cache.error().ToString();
  EXPECT_NE(cache.error().message().find("ferry cache enable --dir"), std::string::npos);
  EXPECT_EQ(Walk(dir).size(), 1u) << "nothing written into a refused directory";
}

TEST(DirAccessTest, AnotherUsersDirectoryIsRefused) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to hand a directory to another account";
  }
  testing::TempDir tmp;
  const std::string dir = tmp.File("cache");
  ASSERT_TRUE(PrepareCacheDir(dir));
  ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
  const DirAccess a = InspectCacheDir(dir, "");
  EXPECT_NE(a.problem.find("not to you"), std::string::npos) << a.problem;
  EXPECT_FALSE(Cache::Create(testing::CacheTestConfig(dir)));
}

TEST(DirAccessTest, AGroupCacheIsSetgid2770WithFiles0660UnderAStrictUmask) {
  testing::TempDir tmp;
  ScopedUmask strict(077);
  const std::string group = std::to_string(::getegid());  // a group this process is in
  const std::string dir = tmp.File("group-cache");
  Config config = testing::CacheTestConfig(dir);
  config.shared = group;
  auto cache = Cache::Create(config);
  ASSERT_TRUE(cache) << cache.error().ToString();
  ASSERT_TRUE(FillOnce(**cache, SomeOrigin()));
  (*cache)->Shutdown();
  for (const auto& [path, st] : Walk(dir)) {
    if (path.find("/users") != std::string::npos) {
      continue;  // the per-user confirmations have their own modes (below)
    }
    const mode_t want = S_ISDIR(st.st_mode) ? 02770 : 0660;
    EXPECT_EQ(st.st_mode & 07777, want) << path;
    EXPECT_EQ(st.st_gid, ::getegid()) << path;
  }
  EXPECT_EQ(ModeOf(dir + "/users"), 03770u);
  EXPECT_EQ(ModeOf(dir + "/users/" + std::to_string(::geteuid())), 0700u);
  // The same directory is refused to a process that expects a private cache, with the fix.
  const DirAccess as_private = InspectCacheDir(dir, "");
  EXPECT_NE(as_private.problem.find("shared = " + as_private.group_name), std::string::npos)
      << as_private.problem;
}

TEST(DirAccessTest, AGroupCacheOfAnotherGroupOrWithOthersBitsIsRefused) {
  testing::TempDir tmp;
  const std::string dir = tmp.File("group-cache");
  ASSERT_TRUE(PrepareCacheDir(dir, Sharing::kGroup, ::getegid()));
  EXPECT_TRUE(InspectCacheDir(dir, std::to_string(::getegid())).problem.empty());
  EXPECT_FALSE(InspectCacheDir(dir, std::to_string(::getegid() + 4242)).problem.empty());
  EXPECT_FALSE(InspectCacheDir(dir, "no-such-group-ferry").problem.empty());
  ASSERT_EQ(::chmod(dir.c_str(), 02775), 0);
  EXPECT_NE(InspectCacheDir(dir, std::to_string(::getegid())).problem.find("outside group"),
            std::string::npos);
}

TEST(DirAccessTest, ApplyCacheModeMakesAnOldOpenTreePrivate) {
  testing::TempDir tmp;
  ScopedUmask open_umask(022);
  const std::string dir = tmp.File("old");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir + "/entries").c_str(), 0755), 0);
  testing::WriteWholeFile(dir + "/entries/x.data", {1, 2, 3});
  ASSERT_EQ(::chmod((dir + "/entries/x.data").c_str(), 0644), 0);
  auto changed = ApplyCacheMode(dir, Sharing::kPrivate, 0);
  ASSERT_TRUE(changed);
  EXPECT_EQ(*changed, 3u);
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(dir + "/entries"), 0700u);
  EXPECT_EQ(ModeOf(dir + "/entries/x.data"), 0600u);
  EXPECT_TRUE(InspectCacheDir(dir, "").problem.empty());
}

// A group cache whose origin says yes or no per test.
struct GroupFixture {
  testing::TempDir tmp;
  std::string dir = tmp.File("group-cache");
  std::shared_ptr<MemoryOrigin> origin = SomeOrigin();
  std::shared_ptr<Cache> cache;

  GroupFixture() {
    Config config = testing::CacheTestConfig(dir);
    config.shared = std::to_string(::getegid());
    cache = *Cache::Create(config);
  }
  uint64_t Count(Counter c) const { return cache->counters().Get(c); }
  std::string ConfirmationFile() const {
    return dir + "/users/" + std::to_string(::geteuid()) + "/" + EntryKey(*NormalizeUrl(kUrl, {}));
  }
};

TEST(GroupCacheTest, TheOriginIsAskedOnceThenTheConfirmationIsTrustedUntilItExpires) {
  GroupFixture f;
  ASSERT_TRUE(FillOnce(*f.cache, f.origin));
  EXPECT_EQ(f.Count(Counter::kAccessChecks), 1u);
  const uint64_t stats_after_fill = f.origin->stat_calls();
  ASSERT_TRUE(FillOnce(*f.cache, f.origin));  // warm: served without asking
  EXPECT_EQ(f.Count(Counter::kAccessChecks), 1u);
  EXPECT_EQ(f.origin->stat_calls(), stats_after_fill);
  // Two hours old: older than shared_reauth (1 h), so the origin is asked again.
  const struct timespec old[2] = {{::time(nullptr) - 7200, 0}, {::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, f.ConfirmationFile().c_str(), old, 0), 0);
  ASSERT_TRUE(FillOnce(*f.cache, f.origin));
  EXPECT_EQ(f.Count(Counter::kAccessChecks), 2u);
  EXPECT_EQ(f.origin->stat_calls(), stats_after_fill + 1);
}

TEST(GroupCacheTest, ARefusalIsTheOriginsErrorWithNoByteServedAndCounted) {
  GroupFixture f;
  ASSERT_TRUE(FillOnce(*f.cache, f.origin));             // another member's job filled the cache
  ASSERT_EQ(::unlink(f.ConfirmationFile().c_str()), 0);  // this user never asked
  f.origin->FailStat(ErrorCode::kPermission);
  auto file = f.cache->Open(kUrl, f.origin);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().code(), ErrorCode::kPermission);
  EXPECT_EQ(f.Count(Counter::kAccessRefused), 1u);
  const uint64_t served = f.Count(Counter::kBytesFromCache);
  // Asked again at the next open, not remembered as a yes.
  EXPECT_FALSE(f.cache->Open(kUrl, f.origin));
  EXPECT_EQ(f.Count(Counter::kAccessRefused), 2u);
  EXPECT_EQ(f.Count(Counter::kBytesFromCache), served);
}

TEST(GroupCacheTest, AConfirmationFolderThatIsNotTheUsersConfirmsNothing) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to hand a folder to another account";
  }
  GroupFixture f;
  ASSERT_TRUE(FillOnce(*f.cache, f.origin));
  AccessConfirmations confirmations(f.dir, 3600);
  const std::string key = EntryKey(*NormalizeUrl(kUrl, {}));
  EXPECT_TRUE(confirmations.Fresh(key));
  ASSERT_EQ(::chown(confirmations.user_dir().c_str(), kNobody, kNobody), 0);
  EXPECT_FALSE(confirmations.Fresh(key));
  ASSERT_EQ(::chown(confirmations.user_dir().c_str(), ::geteuid(), ::getegid()), 0);
  ASSERT_EQ(::chmod(confirmations.user_dir().c_str(), 0755), 0);
  EXPECT_FALSE(confirmations.Fresh(key)) << "a folder others may write confirms nothing";
}

TEST(GroupCacheTest, ReauthZeroAsksTheOriginAtEveryOpen) {
  testing::TempDir tmp;
  Config config = testing::CacheTestConfig(tmp.File("c"));
  config.shared = std::to_string(::getegid());
  config.shared_reauth_s = 0;
  auto cache = *Cache::Create(config);
  auto origin = SomeOrigin();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(FillOnce(*cache, origin));
  }
  EXPECT_EQ(cache->counters().Get(Counter::kAccessChecks), 3u);
}

}  // namespace
}  // namespace ferry::cache
