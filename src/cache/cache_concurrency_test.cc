// Concurrency: many threads on one handle, several "processes" (Cache objects) on one directory.
// Run under ThreadSanitizer by `make test` (label concurrency).
#include <atomic>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "cache/cache.h"
#include "cache/entry_store.h"
#include "cache/memory_origin.h"
#include "cache/url.h"
#include "cache/verify.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

Config ConcurrencyConfig(const std::string& dir) {
  Config c;
  c.dir = dir;
  c.min_free_bytes = 0;
  c.sync = false;
  c.publish_ms = 5;
  c.backoff_ms = 1;
  return c;
}

TEST(CacheConcurrencyTest, IdenticalMissesJoinOneFetch) {
  testing::TempDir dir;
  const auto bytes = testing::PseudoRandomBytes(1 << 20, 1);
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  origin->SetReadDelay(std::chrono::milliseconds(30));  // all threads miss at once
  auto cache = *Cache::Create(ConcurrencyConfig(dir.path()));
  auto file = *cache->Open("root://h//f", origin);
  constexpr int kThreads = 8;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<uint8_t> buf(100000);
      if (!file->Read(300000, buf) || !std::equal(buf.begin(), buf.end(), bytes.begin() + 300000)) {
        bad.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(bad.load(), 0);
  // One fetch of the 100000 bytes (threads arriving after it completed hit the cache or join).
  EXPECT_LE(origin->bytes(), 2u * 100000);
  EXPECT_LE(origin->read_calls(), 2u);
}

TEST(CacheConcurrencyTest, ProcessesAndThreadsShareOneDirectory) {
  testing::TempDir dir;
  constexpr int kFiles = 3;
  constexpr int kProcesses = 4;
  constexpr int kThreads = 4;
  std::vector<std::vector<uint8_t>> data;
  for (int f = 0; f < kFiles; ++f) {
    data.push_back(testing::PseudoRandomBytes(2 << 20, 10 + static_cast<uint64_t>(f)));
  }
  std::atomic<int> bad{0};
  std::atomic<uint64_t> origin_bytes{0};
  auto run_process = [&](int proc) {
    auto cache = *Cache::Create(ConcurrencyConfig(dir.path()));
    std::vector<std::shared_ptr<MemoryOrigin>> origins;
    std::vector<std::unique_ptr<CachedFile>> files;
    for (int f = 0; f < kFiles; ++f) {
      origins.push_back(std::make_shared<MemoryOrigin>(data[static_cast<size_t>(f)]));
      files.push_back(*cache->Open("root://h//file" + std::to_string(f), origins.back()));
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<uint64_t>(proc * 100 + t));
        std::vector<uint8_t> buf;
        for (int i = 0; i < 60; ++i) {
          const auto f = static_cast<size_t>(rng() % kFiles);
          const uint64_t len = 1 + rng() % 30000;
          const uint64_t off = (rng() % 64) * 30000 + rng() % 1000;
          buf.resize(len);
          if (!files[f]->Read(off, buf)
              || !std::equal(buf.begin(), buf.end(), data[f].begin() + static_cast<long>(off))) {
            bad.fetch_add(1);
          }
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    for (auto& o : origins) {
      origin_bytes.fetch_add(o->bytes());
    }
  };
  std::vector<std::thread> processes;
  for (int p = 0; p < kProcesses; ++p) {
    processes.emplace_back(run_process, p);
  }
  for (auto& p : processes) {
    p.join();
  }
  EXPECT_EQ(bad.load(), 0);
  // Every page an index names is intact.
  for (int f = 0; f < kFiles; ++f) {
    const std::string key = EntryKey(*NormalizeUrl("root://h//file" + std::to_string(f)));
    auto report = VerifyEntry(PathsFor(dir.path(), key), false);
    ASSERT_TRUE(report) << report.error().ToString();
    EXPECT_TRUE(report->index_ok);
    EXPECT_EQ(report->pages_bad, 0u);
    EXPECT_EQ(report->fragments_bad, 0u);
    EXPECT_GT(report->held_bytes, 0u);
  }
  // A later "process" finds what the others fetched.
  auto cache = *Cache::Create(ConcurrencyConfig(dir.path()));
  auto origin = std::make_shared<MemoryOrigin>(data[0]);
  auto file = *cache->Open("root://h//file0", origin);
  std::vector<uint8_t> buf(30000);
  uint64_t hits_before = cache->counters().Get(Counter::kHits);
  int reads = 0;
  for (uint64_t slot = 0; slot < 64; ++slot) {
    ASSERT_TRUE(file->Read(slot * 30000 + 1000, std::span(buf).first(1000)));
    ++reads;
  }
  EXPECT_GT(cache->counters().Get(Counter::kHits) - hits_before, 0u);
  EXPECT_LE(cache->counters().Get(Counter::kHits) - hits_before, static_cast<uint64_t>(reads));
}

}  // namespace
}  // namespace ferry::cache
