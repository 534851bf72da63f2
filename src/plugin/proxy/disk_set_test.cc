#include "plugin/proxy/disk_set.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "cache/entry_store.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::proxy {
namespace {

class DiskSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dirs_ = {tmp_.path() + "/d0", tmp_.path() + "/d1"};
    cache::Config c = testing::CacheTestConfig(dirs_[0]);
    c.readahead = false;
    DiskOptions options;
    options.retry_s = 0;  // every Check probes a disk out of service
    // As `ferry proxy run` does: the set creates only its home.
    EXPECT_TRUE(cache::PrepareCacheDir(dirs_[1]));
    set_ = *DiskSet::Create(c, dirs_, options);
  }

  // Opens url (its bytes a function of `seed`), reads it whole and checks the bytes.
  DiskSet::Opened OpenAndRead(const std::string& url, uint64_t seed) {
    const std::vector<uint8_t> bytes = testing::PseudoRandomBytes(size_t{32} << 10, seed);
    auto opened = set_->Open(url, std::make_shared<cache::MemoryOrigin>(bytes), {});
    EXPECT_TRUE(opened);
    std::vector<uint8_t> buf(bytes.size());
    EXPECT_TRUE(opened->file->Read(0, buf));
    EXPECT_EQ(buf, bytes);
    return std::move(*opened);
  }

  void Close(DiskSet::Opened& o) {
    o.file->Close();
    o.file.reset();
    set_->Closed(o.disk);
  }

  bool HasIndex(int disk, const std::string& url) {
    const std::string key = cache::EntryKey(*cache::NormalizeUrl(url, {}));
    struct stat st = {};
    return ::stat(cache::PathsFor(dirs_[static_cast<size_t>(disk)], key).idx().c_str(), &st) == 0;
  }

  testing::TempDir tmp_;
  std::vector<std::string> dirs_;
  std::unique_ptr<DiskSet> set_;
};

TEST_F(DiskSetTest, NewEntriesSpreadByLoadAndStayWhereTheyAre) {
  // Same file system, so the same free space: a disk with a handle open weighs half.
  DiskSet::Opened a = OpenAndRead("root://h//a", 1);
  DiskSet::Opened b = OpenAndRead("root://h//b", 2);
  ASSERT_GE(a.disk, 0);
  ASSERT_GE(b.disk, 0);
  EXPECT_NE(a.disk, b.disk);
  const int a_disk = a.disk;
  Close(a);
  Close(b);
  for (size_t i = 0; i < set_->size(); ++i) {
    ASSERT_TRUE(set_->cache(i)->Flush());
  }
  EXPECT_TRUE(HasIndex(a_disk, "root://h//a"));
  EXPECT_FALSE(HasIndex(1 - a_disk, "root://h//a"));
  // Found again on its disk, whatever the load says now.
  DiskSet::Opened held = OpenAndRead("root://h//b", 2);
  DiskSet::Opened again = OpenAndRead("root://h//a", 1);
  EXPECT_EQ(again.disk, a_disk);
  EXPECT_GT(again.file->handle_counters().bytes_from_cache.load(), 0u);
  Close(again);
  Close(held);
  const std::vector<DiskInfo> info = set_->Snapshot();
  ASSERT_EQ(info.size(), 2u);
  EXPECT_EQ(info[0].placed + info[1].placed, 2u);
  EXPECT_EQ(info[0].open + info[1].open, 0);
}

TEST_F(DiskSetTest, FailingDiskIsTakenOutAndRetried) {
  DiskSet::Opened a = OpenAndRead("root://h//a", 1);
  Close(a);
  ASSERT_TRUE(set_->cache(static_cast<size_t>(a.disk))->Flush());
  const int first = a.disk;
  const int other = 1 - first;
  // An entry's own fault (not found, the marker still there) leaves the disk in service.
  set_->OnFault(static_cast<size_t>(first), NotFoundError("entry removed by another process"));
  EXPECT_EQ(set_->up(), 2u);
  const uint64_t generation = set_->generation();
  set_->OnFault(static_cast<size_t>(first), IoError("pread", EIO));
  EXPECT_EQ(set_->up(), 1u);
  EXPECT_NE(set_->generation(), generation);
  std::vector<DiskInfo> info = set_->Snapshot();
  EXPECT_FALSE(info[static_cast<size_t>(first)].up);
  EXPECT_NE(info[static_cast<size_t>(first)].reason.find("EIO"), std::string::npos);
  EXPECT_EQ(info[static_cast<size_t>(first)].outages, 1u);
  // Its entry is not read from it any more: the other disk takes the file.
  DiskSet::Opened b = OpenAndRead("root://h//a", 1);
  EXPECT_EQ(b.disk, other);
  Close(b);
  // The other disk's marker vanishes (unmounted): the health check takes it out too.
  const std::string marker = dirs_[static_cast<size_t>(other)] + "/" + cache::kMarkerName;
  const std::string moved = marker + ".away";
  ASSERT_EQ(::rename(marker.c_str(), moved.c_str()), 0);
  // The first disk's probe succeeds at this check (retry_s 0): it is back.
  set_->Check();
  info = set_->Snapshot();
  EXPECT_TRUE(info[static_cast<size_t>(first)].up);
  EXPECT_FALSE(info[static_cast<size_t>(other)].up);
  EXPECT_NE(info[static_cast<size_t>(other)].reason.find("gone"), std::string::npos);
  // A disk whose marker is still gone stays out at its retries.
  set_->Check();
  EXPECT_FALSE(set_->Snapshot()[static_cast<size_t>(other)].up);
  ASSERT_EQ(::rename(moved.c_str(), marker.c_str()), 0);
  set_->Check();
  EXPECT_EQ(set_->up(), 2u);
}

TEST_F(DiskSetTest, NoDiskInServiceReadsThrough) {
  set_->OnFault(0, IoError("write", EIO));
  set_->OnFault(1, IoError("write", EROFS));
  EXPECT_EQ(set_->up(), 0u);
  DiskSet::Opened o = OpenAndRead("root://h//c", 3);
  EXPECT_EQ(o.disk, -1);
  EXPECT_TRUE(o.file->pass_through());
  Close(o);
  EXPECT_FALSE(HasIndex(0, "root://h//c"));
  EXPECT_FALSE(HasIndex(1, "root://h//c"));
}

TEST(DiskSetStartTest, AMissingDataDiskStartsOutOfServiceAndJoinsLater) {
  testing::TempDir tmp;
  const std::vector<std::string> dirs = {tmp.path() + "/home", tmp.path() + "/late"};
  cache::Config c = testing::CacheTestConfig(dirs[0]);
  c.readahead = false;
  DiskOptions options;
  options.retry_s = 0;
  auto set = DiskSet::Create(c, dirs, options);
  ASSERT_TRUE(set) << set.error().ToString();
  // The home is made; the missing data disk is not (it may be an unmounted disk).
  EXPECT_EQ((*set)->up(), 1u);
  EXPECT_EQ((*set)->cache(1), nullptr);
  struct stat st = {};
  EXPECT_NE(::stat(dirs[1].c_str(), &st), 0);
  EXPECT_NE((*set)->Snapshot()[1].reason.find("does not exist"), std::string::npos);
  (*set)->Check();
  EXPECT_EQ((*set)->up(), 1u);
  // Prepared (as `ferry proxy run` does): the next probe takes it in, with a cache.
  ASSERT_TRUE(cache::PrepareCacheDir(dirs[1]));
  (*set)->Check();
  EXPECT_EQ((*set)->up(), 2u);
  ASSERT_NE((*set)->cache(1), nullptr);
  // The home must work: a home that cannot be a cache stops the set.
  ASSERT_EQ(::mkdir((tmp.path() + "/foreign").c_str(), 0700), 0);
  testing::WriteWholeFile(tmp.path() + "/foreign/x", {1, 2, 3});
  EXPECT_FALSE(DiskSet::Create(c, {tmp.path() + "/foreign", dirs[1]}, options));
}

TEST(DiskSetStartTest, ADiskIsNotProbedBeforeItsInterval) {
  testing::TempDir tmp;
  const std::vector<std::string> dirs = {tmp.path() + "/a", tmp.path() + "/b"};
  cache::Config c = testing::CacheTestConfig(dirs[0]);
  ASSERT_TRUE(cache::PrepareCacheDir(dirs[1]));
  DiskOptions options;
  options.retry_s = 3600;
  auto set = *DiskSet::Create(c, dirs, options);
  set->OnFault(1, IoError("fsync", EIO));
  set->Check();  // healthy again, but not due for an hour
  EXPECT_EQ(set->up(), 1u);
  EXPECT_FALSE(set->Snapshot()[1].up);
}

TEST(DiskHealthTest, ErrnoNames) {
  EXPECT_NE(DiskErrnoName(EIO), nullptr);
  EXPECT_NE(DiskErrnoName(EROFS), nullptr);
  EXPECT_EQ(DiskErrnoName(ENOSPC), nullptr);  // full is not failed: eviction's business
  EXPECT_EQ(DiskErrnoName(ENOENT), nullptr);
  testing::TempDir tmp;
  EXPECT_NE(DiskHealth(tmp.path()).find("gone"), std::string::npos);
}

// The room is given, not read from the test machine's disk (whose fill level is not the
// test's to decide).
TEST(DiskHealthTest, OnlyRoomLeftMakesNoSpaceADeviceFault) {
  const DiskSpace roomy{
      .size_bytes = 100ULL << 30, .free_bytes = 40ULL << 30, .free_inodes = 1000000};
  EXPECT_NE(UnexplainedNoSpace(roomy, 0, 0).find("ENOSPC"), std::string::npos);
  EXPECT_NE(UnexplainedNoSpace(roomy, 0, 0).find("40960 MiB"), std::string::npos);
  // Full by any measure: a tenth free is the line, twice min_free, the inodes.
  DiskSpace tight = roomy;
  tight.free_bytes = (10ULL << 30) - 1;
  EXPECT_EQ(UnexplainedNoSpace(tight, 0, 0), "");
  tight.free_bytes = 10ULL << 30;
  EXPECT_NE(UnexplainedNoSpace(tight, 0, 0), "");
  EXPECT_EQ(UnexplainedNoSpace(roomy, (20ULL << 30) + 1, 0), "");
  EXPECT_NE(UnexplainedNoSpace(roomy, 20ULL << 30, 0), "");
  EXPECT_EQ(UnexplainedNoSpace(roomy, 0, 1000000), "");
  DiskSpace few_inodes = roomy;
  few_inodes.free_inodes = 64;
  EXPECT_EQ(UnexplainedNoSpace(few_inodes, 0, 0), "");
  DiskSpace uncounted = roomy;  // a file system that does not count inodes
  uncounted.free_inodes = UINT64_MAX;
  EXPECT_NE(UnexplainedNoSpace(uncounted, 0, UINT64_MAX - 1), "");
  EXPECT_EQ(UnexplainedNoSpace(DiskSpace{}, 0, 0), "");  // statvfs failed
}

}  // namespace
}  // namespace ferry::proxy
