// The drainer (replica_drain.h): the files a pass left are relocated a few at a time, each on a
// thread of its own, and every one ends right — built, served to the original's values, verified
// clean, its request and its re-encoding request gone. Run under ThreadSanitizer by `make test`
// (label concurrency).
#include "replica/replica_drain.h"

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cache/cache.h"
#include "cache/dir_access.h"
#include "cache/entry_store.h"
#include "cache/testing/cached_source.h"
#include "cache/testing/memory_origin.h"
#include "cache/verify.h"
#include "replica/hooks.h"
#include "replica/replica_build.h"
#include "replica/replica_queue.h"
#include "replica/replica_testing.h"
#include "testing/testing.h"

namespace ferry::replica {
namespace {

using cache::Cache;
using cache::CachedSource;
using cache::Config;
using cache::MemoryOrigin;
using cache::PathsFor;

// Counts the builds inside `reencode_fits` (asked once per file, on the thread that builds it)
// and holds each until `want` are in at once, or until a generous bound passes: a drainer that
// builds one file after another never has two in, and the test fails instead of hanging.
struct Meeting {
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  int most = 0;
  std::set<std::thread::id> threads;

  bool Arrive(int want) {
    std::unique_lock<std::mutex> lock(mu);
    ++inside;
    most = std::max(most, inside);
    threads.insert(std::this_thread::get_id());
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return most >= want; });
    --inside;
    return false;  // relocate: the drainer's copy
  }
};

TEST(ReplicaDrain, TwoQueuedFilesAreRelocatedAtOnceAndBothEndRight) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = SampleTreeBytes(dir);
  const Config config = ServingConfig(dir.path() + "/cache");
  const std::vector<std::string> urls = {"root://origin.example:1094//data/a.root",
                                         "root://origin.example:1094//data/b.root"};
  {
    auto cache = Cache::Create(config).value();
    for (const std::string& url : urls) {
      auto f = cache->Open(url, std::make_shared<MemoryOrigin>(bytes)).value();
      std::vector<uint8_t> whole(bytes.size());
      ASSERT_TRUE(f->Read(0, whole));
    }
    ASSERT_TRUE(cache->Flush());
  }
  // The pass ended: both files closed and queued (as RequestReplicaBuild leaves them).
  ASSERT_TRUE(cache::MakeCacheSubdir(QueueDir(config)));
  for (const std::string& url : urls) {
    std::ofstream(QueueDir(config) + "/" + KeyOf(url)).flush();
  }
  ASSERT_EQ(QueuedKeys(config).size(), 2u);

  Meeting meeting;
  ReplicaBuildOptions options;
  options.reencode_fits = [&meeting](std::string* why) {
    *why = "test: the copy first";
    return meeting.Arrive(2);
  };
  ASSERT_TRUE(DrainReplicaQueue(config, options));

  EXPECT_EQ(meeting.most, 2);  // both relocations at once
  EXPECT_EQ(meeting.threads.size(), 2u);
  EXPECT_TRUE(QueuedKeys(config).empty());
  EXPECT_TRUE(QueuedReencodes(config).empty());  // both relocated, then re-encoded
  io::MemorySource original_src(bytes);
  const auto original = Values(original_src);
  auto cache = Cache::Create(config).value();
  for (const std::string& url : urls) {
    SCOPED_TRACE(url);
    auto status = ReplicaStatusOf(PathsFor(config.dir, KeyOf(url)));
    ASSERT_TRUE(status.has_value()) << status.error().ToString();
    EXPECT_EQ(status->state, ReplicaState::kBuilt) << status->reason;
    EXPECT_EQ(status->stage, 2);
    EXPECT_EQ(status->missing_baskets, 0u);
    auto f = cache->Open(url, std::make_shared<MemoryOrigin>(bytes)).value();
    ASSERT_TRUE(f->virtual_file());
    CachedSource src(*f);
    EXPECT_EQ(Values(src), original);
    auto v = cache::VerifyEntry(PathsFor(config.dir, KeyOf(url)), /*repair=*/false, 2000, nullptr,
                                Hooks().get());
    ASSERT_TRUE(v.has_value()) << v.error().ToString();
    EXPECT_FALSE(v->bad()) << v->replica_error;
  }
}

}  // namespace
}  // namespace ferry::replica
