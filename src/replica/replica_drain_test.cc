// The drainer (replica_drain.h): the files a pass left are relocated a few at a time, each on a
// thread of its own, without waiting for a re-encoding in progress, and every one ends right —
// built, served to the original's values, verified clean, its request and its re-encoding
// request gone. Run under ThreadSanitizer by `make test` (label concurrency).
#include "replica/replica_drain.h"

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
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
  // The pass moved past both files (as RequestReplicaBuild leaves them: the stage is chosen,
  // reencode_fits below says relocate).
  ASSERT_TRUE(cache::MakeCacheSubdir(QueueDir(config)));
  for (const std::string& url : urls) {
    std::ofstream(QueueDir(config) + "/" + KeyOf(url)) << kStillOpen;
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

// Holds the first thread that arrives (Arrive) until Release, at most 120 s, and lets every
// other pass: a build that does not go on (an idle-class thread a loaded machine does not run,
// a relocation still copying) for as long as the test needs.
struct HoldFirst {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<std::thread::id> holder;
  bool holding = false;
  bool released = false;

  void Arrive() {
    std::unique_lock<std::mutex> lock(mu);
    if (!holder) {
      holder = std::this_thread::get_id();
      cv.notify_all();
    }
    if (*holder == std::this_thread::get_id()) {
      holding = true;
      cv.wait_for(lock, std::chrono::seconds(120), [&] { return released; });
      holding = false;
    }
  }
  bool WaitHeld() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60), [&] { return holding; });
  }
  bool Holding() {
    std::lock_guard<std::mutex> lock(mu);
    return holding;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      released = true;
    }
    cv.notify_all();
  }
};

// Fills the cache with each of `urls` (the sample tree) and closes it.
void Fill(const Config& config,
          const std::vector<uint8_t>& bytes,
          const std::vector<std::string>& urls) {
  auto cache = Cache::Create(config).value();
  for (const std::string& url : urls) {
    auto f = cache->Open(url, std::make_shared<MemoryOrigin>(bytes)).value();
    std::vector<uint8_t> whole(bytes.size());
    ASSERT_TRUE(f->Read(0, whole));
  }
  ASSERT_TRUE(cache->Flush());
}

// Asks for `url`'s replica as RequestReplicaBuild does for a close (an empty request).
void Ask(const Config& config, const std::string& url) {
  std::ofstream(QueueDir(config) + "/" + KeyOf(url)).flush();
}

// Waits, at most 30 s, for the relocation of `url` to be published.
bool WaitRelocated(const Config& config, const std::string& url) {
  for (int i = 0; i < 3000; ++i) {
    auto status = ReplicaStatusOf(PathsFor(config.dir, KeyOf(url)));
    if (status && status->stage >= 1 && status->missing_baskets == 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The same; whether the relocation was published while `hold` still held.
bool RelocatedWhileHeld(const Config& config, const std::string& url, HoldFirst& hold) {
  Ask(config, url);
  return WaitRelocated(config, url) && hold.Holding();
}

// Both files at stage 2, served to the original's values.
void ExpectReencoded(const Config& config,
                     const std::vector<uint8_t>& bytes,
                     const std::vector<std::string>& urls) {
  io::MemorySource original_src(bytes);
  const auto original = Values(original_src);
  auto cache = Cache::Create(config).value();
  for (const std::string& url : urls) {
    SCOPED_TRACE(url);
    auto status = ReplicaStatusOf(PathsFor(config.dir, KeyOf(url)));
    ASSERT_TRUE(status.has_value()) << status.error().ToString();
    EXPECT_EQ(status->state, ReplicaState::kBuilt) << status->reason;
    EXPECT_EQ(status->stage, 2);
    auto f = cache->Open(url, std::make_shared<MemoryOrigin>(bytes)).value();
    ASSERT_TRUE(f->virtual_file());
    CachedSource src(*f);
    EXPECT_EQ(Values(src), original);
  }
}

// Runs the drainer with `options` until `hold` holds its first thread, asks for `url` and
// returns whether its relocation was published while still held; then lets the drainer
// finish and expects the queue empty and every one of `urls` re-encoded.
bool DrainRelocatesWhileHeld(const Config& config,
                             const ReplicaBuildOptions& options,
                             HoldFirst& hold,
                             const std::string& url,
                             const std::vector<uint8_t>& bytes,
                             const std::vector<std::string>& urls) {
  std::thread drainer([&] { EXPECT_TRUE(DrainReplicaQueue(config, options)); });
  const bool held = hold.WaitHeld();
  const bool relocated = held && RelocatedWhileHeld(config, url, hold);
  hold.Release();
  drainer.join();
  EXPECT_TRUE(held) << "the drainer never reached the hold";
  EXPECT_TRUE(QueuedKeys(config).empty());
  EXPECT_TRUE(QueuedReencodes(config).empty());
  ExpectReencoded(config, bytes, urls);
  return relocated;
}

// A re-encoding that does not reach its next pause does not hold back a file a pass leaves
// meanwhile: that file is relocated, its replica serves, while the re-encoding is still held;
// then both end at stage 2.
TEST(ReplicaDrain, AFileLeftWhileAReencodingIsHeldIsRelocatedAtOnce) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = SampleTreeBytes(dir);
  const Config config = ServingConfig(dir.path() + "/cache");
  const std::string held_url = "root://origin.example:1094//data/held.root";
  const std::string left_url = "root://origin.example:1094//data/left.root";
  Fill(config, bytes, {held_url, left_url});
  RequestReencode(config, KeyOf(held_url));  // relocated by an earlier pass, say

  HoldFirst hold;  // the first thread to pause is the re-encoding's
  ReplicaBuildOptions options;
  options.reencode_fits = [](std::string* why) {
    *why = "test: the copy first";
    return false;
  };
  options.pause = [&hold](const std::function<bool()>&) {
    hold.Arrive();
  };
  EXPECT_TRUE(DrainRelocatesWhileHeld(config, options, hold, left_url, bytes, {held_url, left_url}))
      << "the file left was not relocated while the re-encoding was held";
}

// A file asked for while another is relocated starts on a free thread at once, not when the
// relocations running are all done: the closes at a pass's end land one by one.
TEST(ReplicaDrain, AFileAskedForDuringARelocationStartsAtOnce) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = SampleTreeBytes(dir);
  const Config config = ServingConfig(dir.path() + "/cache");
  const std::string first_url = "root://origin.example:1094//data/first.root";
  const std::string next_url = "root://origin.example:1094//data/next.root";
  Fill(config, bytes, {first_url, next_url});
  ASSERT_TRUE(cache::MakeCacheSubdir(QueueDir(config)));
  std::ofstream(QueueDir(config) + "/" + KeyOf(first_url)) << kStillOpen;  // moved past

  HoldFirst hold;  // the first relocation, held as it chooses its stage
  ReplicaBuildOptions options;
  options.reencode_fits = [&hold](std::string* why) {
    *why = "test: the copy first";
    hold.Arrive();
    return false;
  };
  EXPECT_TRUE(
      DrainRelocatesWhileHeld(config, options, hold, next_url, bytes, {first_url, next_url}))
      << "the file asked for second waited for the first";
}

// A file whose last handle closed is relocated at the drainer's priority, though the closing
// process still holds its open lock (it lets it go a moment after asking): never on the low
// thread, which a loaded machine may not run (here: one that never goes on).
TEST(ReplicaDrain, AClosedFileIsNotRelocatedOnTheLowThreadWhileItsCloserLetsGo) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = SampleTreeBytes(dir);
  const Config config = ServingConfig(dir.path() + "/cache");
  const std::string url = "root://origin.example:1094//data/closed.root";
  Fill(config, bytes, {url});
  // The closing process, still holding the entry open.
  auto closer = Cache::Create(config).value();
  auto handle = closer->Open(url, std::make_shared<MemoryOrigin>(bytes)).value();
  ASSERT_TRUE(cache::MakeCacheSubdir(QueueDir(config)));
  // A low thread that does not go on: held until the end, if it comes before the relocation
  // is published (the re-encoding that follows may take it: the file is open).
  HoldFirst hold;
  ReplicaBuildOptions options;
  options.reencode_fits = [](std::string* why) {
    *why = "test: the copy first";
    return false;
  };
  options.become_low = [&] {
    auto status = ReplicaStatusOf(PathsFor(config.dir, KeyOf(url)));
    if (!status || status->stage == 0) {
      hold.Arrive();
    }
  };
  Ask(config, url);
  std::thread drainer([&] { EXPECT_TRUE(DrainReplicaQueue(config, options)); });
  const bool relocated = WaitRelocated(config, url);
  handle.reset();
  hold.Release();
  drainer.join();
  EXPECT_TRUE(relocated) << "the closed file went to the low thread";
}

// With the cores to re-encode at once, a file the pass moved past is re-encoded in one stage,
// but one it closed is relocated first (its user may be waiting for it: the pass may be
// ending), then re-encoded.
TEST(ReplicaDrain, AClosedFileIsRelocatedFirstEvenWithTheRoomToReencode) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = SampleTreeBytes(dir);
  const Config config = ServingConfig(dir.path() + "/cache");
  const std::string closed_url = "root://origin.example:1094//data/closed.root";
  const std::string open_url = "root://origin.example:1094//data/open.root";
  Fill(config, bytes, {closed_url, open_url});
  ASSERT_TRUE(cache::MakeCacheSubdir(QueueDir(config)));
  Ask(config, closed_url);
  std::ofstream(QueueDir(config) + "/" + KeyOf(open_url)) << kStillOpen;
  ReplicaBuildOptions options;
  options.reencode_fits = [](std::string* why) {
    *why = "test: the room is there";
    return true;
  };
  ASSERT_TRUE(DrainReplicaQueue(config, options));
  auto closed = ReplicaStatusOf(PathsFor(config.dir, KeyOf(closed_url)));
  auto open = ReplicaStatusOf(PathsFor(config.dir, KeyOf(open_url)));
  ASSERT_TRUE(closed && open);
  EXPECT_EQ(closed->generation, 2u) << "relocated, then re-encoded";
  EXPECT_EQ(open->generation, 1u) << "re-encoded at once";
  ExpectReencoded(config, bytes, {closed_url, open_url});
}

// A request says whether the pass still had the file open (moved past it) or closed it; a
// close's request stays a close's.
TEST(ReplicaDrain, ARequestSaysWhetherTheFileWasStillOpen) {
  testing::TempDir dir;
  Config config = ServingConfig(dir.path() + "/cache");
  ASSERT_TRUE(cache::MakeCacheSubdir(config.dir));
  config.replica_builder = dir.path() + "/no-ferry";  // queue only: no drainer starts
  const std::string key = "0123456789abcdef";
  EXPECT_FALSE(RequestedStillOpen(config, key));
  RequestReplicaBuild(config, key, /*still_open=*/true);
  EXPECT_EQ(QueuedKeys(config), std::vector<std::string>{key});
  EXPECT_TRUE(RequestedStillOpen(config, key));
  RequestReplicaBuild(config, key, /*still_open=*/false);
  EXPECT_FALSE(RequestedStillOpen(config, key));
  RequestReplicaBuild(config, key, /*still_open=*/true);
  EXPECT_FALSE(RequestedStillOpen(config, key));
}

}  // namespace
}  // namespace ferry::replica
