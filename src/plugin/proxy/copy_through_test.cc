#include "plugin/proxy/copy_through.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/mutex.h"
#include "cache/testing/memory_origin.h"
#include "readahead/file_ahead.h"
#include "testing/testing.h"

namespace ferry::proxy {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kKiB = 1ull << 10;

// Runs each task on its own thread; joined by Join (after the stream stopped).
class Threads {
 public:
  CopyStream::Runner runner() {
    return [this](std::function<void()> task) {
      MutexLock lock(mu_);
      threads_.emplace_back(std::move(task));
    };
  }
  void Join() {
    std::vector<std::thread> all;
    {
      MutexLock lock(mu_);
      all.swap(threads_);
    }
    for (std::thread& t : all) {
      t.join();
    }
  }

 private:
  Mutex mu_;
  std::vector<std::thread> threads_ FERRY_GUARDED_BY(mu_);
};

CopyStream::Runner Inline() {
  return [](const std::function<void()>& task) {
    task();
  };
}

struct Fixture {
  explicit Fixture(uint64_t size) : bytes(testing::PseudoRandomBytes(size, 39)) {
    cache::Config c;
    c.dir = tmp.path() + "/c";
    c.min_free_bytes = 0;
    c.sync = false;
    c.readahead = false;
    cache = *cache::Cache::Create(c);
    origin = std::make_shared<cache::MemoryOrigin>(bytes);
  }
  std::unique_ptr<cache::CachedFile> Open() { return *cache->Open("root://h//f", origin); }
  // Bytes of the file the cache holds (after the write-behind stored what it was given).
  uint64_t Held(cache::CachedFile& f) {
    EXPECT_TRUE(cache->Flush());
    uint64_t held = 0;
    for (uint64_t off = 0; off < bytes.size(); off += 64 * kKiB) {
      const uint64_t n = std::min<uint64_t>(64 * kKiB, bytes.size() - off);
      std::vector<uint8_t> buf(n);
      io::ReadRequest r{off, buf, {}};
      held += f.AllHeld({&r, 1}) ? n : 0;
    }
    return held;
  }
  // Reads [0, size) in order in reads of `step` through `copy`; checks every byte. Returns the
  // bytes served through.
  uint64_t Copy(cache::CachedFile& f, CopyThrough& copy, uint64_t step) {
    uint64_t through_all = 0;
    std::vector<uint8_t> buf(step);
    for (uint64_t off = 0; off < bytes.size(); off += step) {
      const uint64_t n = std::min<uint64_t>(step, bytes.size() - off);
      io::ReadRequest r{off, {buf.data(), n}, {}};
      uint64_t through = 0;
      EXPECT_TRUE(copy.Read(f, {&r, 1}, through)) << off;
      EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + static_cast<long>(n),
                             bytes.begin() + static_cast<long>(off)))
          << off;
      through_all += through;
    }
    return through_all;
  }

  testing::TempDir tmp;
  std::vector<uint8_t> bytes;
  std::shared_ptr<cache::Cache> cache;
  std::shared_ptr<cache::MemoryOrigin> origin;
};

TEST(CopyThroughTest, DetectAtLeavesRoomForReadsInFlightAndReadAhead) {
  EXPECT_EQ(CopyThrough::DetectAt(1000 * kMiB, 0.25), 250 * kMiB - 48 * kMiB);
  EXPECT_EQ(CopyThrough::DetectAt(1000 * kMiB, 0.0), 16 * kMiB);  // kMinPrefix
  EXPECT_EQ(CopyThrough::DetectAt(4000 * kMiB, 0.0), 40 * kMiB);  // the detector's least, 1%
  EXPECT_EQ(CopyThrough::DetectAt(100 * kMiB, 0.25), 16 * kMiB);
  EXPECT_EQ(CopyThrough::DetectAt(10 * kMiB, 0.25), 10 * kMiB);
  EXPECT_FALSE(CopyThrough::For(100 * kMiB, 1.0,
                                std::make_shared<cache::MemoryOrigin>(std::vector<uint8_t>(16)),
                                Inline(), nullptr))
      << "fraction 1: copies are cached whole";
  EXPECT_FALSE(CopyThrough::For(8 * kMiB, 0.25,
                                std::make_shared<cache::MemoryOrigin>(std::vector<uint8_t>(16)),
                                Inline(), nullptr))
      << "small files are cached even if copied";
}

TEST(CopyThroughTest, ACopyIsCachedOnlyUpToTheFraction) {
  Fixture s(80 * kMiB);
  auto f = s.Open();
  CopyCounters counters;
  Threads threads;
  CopyThrough copy(s.bytes.size(), 0.9, s.origin, threads.runner(), &counters);
  const uint64_t through = s.Copy(*f, copy, 1 * kMiB);
  EXPECT_TRUE(copy.copying());
  copy.Stop();
  threads.Join();
  const uint64_t held = s.Held(*f);
  const uint64_t detect_at = CopyThrough::DetectAt(s.bytes.size(), 0.9);  // 24 MiB
  EXPECT_GE(held, detect_at / 2);
  // The prefix read when the copy was recognised and the read-ahead window beyond it (the
  // frontier: read through the cache), within the fraction.
  EXPECT_LE(held, detect_at + readahead::FileAhead::kSeqWindowMax + 1 * kMiB);
  EXPECT_LE(held, s.bytes.size() * 9 / 10);
  EXPECT_EQ(through + held, s.bytes.size());
  EXPECT_EQ(counters.copies.load(), 1u);
  EXPECT_EQ(counters.bytes_through.load(), through);
  // Each block fetched once; the first one whole, though the cache served its head.
  EXPECT_GE(copy.stream().origin_bytes(), through);
  EXPECT_LE(copy.stream().origin_bytes(), through + CopyStream::kBlock);
}

TEST(CopyThroughTest, AWarmCopyIsServedByTheCacheAndFetchesNothing) {
  Fixture s(32 * kMiB);
  auto f = s.Open();
  std::vector<uint8_t> all(s.bytes.size());
  ASSERT_TRUE(f->Read(0, all));  // an analysis read all of it
  ASSERT_EQ(s.Held(*f), s.bytes.size());
  const uint64_t fetched = s.origin->bytes();
  CopyThrough copy(s.bytes.size(), 0.1, s.origin, Inline(), nullptr);
  EXPECT_EQ(s.Copy(*f, copy, 2 * kMiB), 0u);
  EXPECT_TRUE(copy.copying());
  EXPECT_EQ(s.origin->bytes(), fetched);
}

TEST(CopyThroughTest, AnAnalysisReadingEveryClusterIsNotACopy) {
  Fixture s(64 * kMiB);
  auto f = s.Open();
  CopyThrough copy(s.bytes.size(), 0.0, s.origin, Inline(), nullptr);
  std::vector<uint8_t> buf(256 * kKiB);
  constexpr auto kBasket = static_cast<long>(128 * kKiB);
  // Two branches' baskets in every 1 MiB cluster, cluster after cluster.
  for (uint64_t off = 0; off + kMiB <= s.bytes.size(); off += kMiB) {
    io::ReadRequest r[2] = {{off, {buf.data(), 128 * kKiB}, {}},
                            {off + 512 * kKiB, {buf.data() + kBasket, 128 * kKiB}, {}}};
    uint64_t through = 0;
    ASSERT_TRUE(copy.Read(*f, r, through));
    EXPECT_EQ(through, 0u);
    EXPECT_TRUE(
        std::equal(buf.begin(), buf.begin() + kBasket, s.bytes.begin() + static_cast<long>(off)));
  }
  EXPECT_FALSE(copy.copying());
  EXPECT_EQ(s.Held(*f), 256 * kKiB * 64) << "all of it cached";
}

TEST(CopyThroughTest, ParallelChunksOutOfOrderGetTheirBytesOnce) {
  Fixture s(96 * kMiB);
  Threads threads;
  CopyStream stream(s.origin, s.bytes.size(), threads.runner());
  // xrdcp: 4 readers, each reading 8 MiB chunks in 2 MiB pieces; chunk k by reader k % 4.
  std::vector<std::thread> readers;
  readers.reserve(4);
  std::atomic<int> bad{0};
  Mutex order_mu;
  std::vector<uint64_t> order;  // the blocks in the order their reads returned
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::vector<uint8_t> buf(2 * kMiB);
      for (auto chunk = static_cast<uint64_t>(t); chunk * 8 * kMiB < s.bytes.size(); chunk += 4) {
        for (uint64_t off = chunk * 8 * kMiB; off < (chunk + 1) * 8 * kMiB; off += 2 * kMiB) {
          io::ReadRequest r{off, buf, {}};
          if (!stream.Read({&r, 1})
              || !std::equal(buf.begin(), buf.end(), s.bytes.begin() + static_cast<long>(off))) {
            ++bad;
          }
          MutexLock lock(order_mu);
          order.push_back(off);
        }
      }
    });
  }
  for (std::thread& r : readers) {
    r.join();
  }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(stream.origin_bytes(), s.bytes.size()) << "each block fetched once";
  // A page read again (XrdCl's second read of a pgread page it doubts): from memory while its
  // block is among the last kKeepRead read, else alone from the origin, not as a block. The
  // readers finish their chunks in any order, so the blocks are the last and the first whose
  // reads returned (4 readers at once: within the last and first 4 retired, of 48 blocks).
  ASSERT_EQ(order.size(), s.bytes.size() / (2 * kMiB));
  std::vector<uint8_t> page(4096);
  for (const uint64_t off : {order.back() + 8192, order.front() + 8192}) {
    io::ReadRequest again{off, page, {}};
    ASSERT_TRUE(stream.Read({&again, 1}));
    EXPECT_TRUE(std::equal(page.begin(), page.end(), s.bytes.begin() + static_cast<long>(off)));
  }
  EXPECT_EQ(stream.origin_bytes(), s.bytes.size() + page.size());
  stream.Stop();
  threads.Join();
}

// xrdcp's pattern: 4 readers, each reading 8 MiB chunks in 2 MiB pieces; chunk k by reader
// k % 4. Returns the reads whose bytes were wrong.
int CopyLikeXrdcp(CopyStream& stream, const std::vector<uint8_t>& bytes) {
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  readers.reserve(4);
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::vector<uint8_t> buf(2 * kMiB);
      for (auto chunk = static_cast<uint64_t>(t); chunk * 8 * kMiB < bytes.size(); chunk += 4) {
        for (uint64_t off = chunk * 8 * kMiB; off < (chunk + 1) * 8 * kMiB; off += 2 * kMiB) {
          io::ReadRequest r{off, buf, {}};
          if (!stream.Read({&r, 1})
              || !std::equal(buf.begin(), buf.end(), bytes.begin() + static_cast<long>(off))) {
            ++bad;
          }
        }
      }
    });
  }
  for (std::thread& r : readers) {
    r.join();
  }
  return bad.load();
}

TEST(CopyThroughTest, WithoutMemoryACopyReadsStraightIntoTheBuffers) {
  Fixture s(24 * kMiB);
  CopyBudget budget(0);
  Threads threads;
  CopyStream stream(s.origin, s.bytes.size(), threads.runner(), &budget);
  // Reads across block boundaries: each is read whole from the origin, in one request.
  std::vector<uint8_t> buf(3 * kMiB);
  for (uint64_t off = 0; off < s.bytes.size(); off += buf.size()) {
    io::ReadRequest r{off, buf, {}};
    ASSERT_TRUE(stream.Read({&r, 1})) << off;
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), s.bytes.begin() + static_cast<long>(off)));
  }
  EXPECT_EQ(budget.peak(), 0u);
  EXPECT_GT(budget.refused(), 0u);
  EXPECT_EQ(stream.origin_bytes(), s.bytes.size()) << "each byte read once";
  EXPECT_EQ(stream.origin_requests(), s.bytes.size() / buf.size());
  stream.Stop();
  threads.Join();
}

// A read across a block freed after it was read whole and one still kept: the first part
// comes from the origin, the second from memory, each byte right.
TEST(CopyThroughTest, AReadAcrossAFreedAndAKeptBlock) {
  Fixture s(48 * kMiB);
  CopyStream stream(s.origin, s.bytes.size(), Inline());
  std::vector<uint8_t> buf(CopyStream::kBlock);
  for (uint64_t off = 0; off < 20 * CopyStream::kBlock; off += CopyStream::kBlock) {
    io::ReadRequest r{off, buf, {}};
    ASSERT_TRUE(stream.Read({&r, 1}));
  }
  // Blocks 0-3 are freed (16 kept: 4-19).
  const uint64_t fetched = stream.origin_bytes();
  std::vector<uint8_t> across(16 * kKiB);
  const uint64_t at = 4 * CopyStream::kBlock - 8 * kKiB;
  io::ReadRequest r{at, across, {}};
  ASSERT_TRUE(stream.Read({&r, 1}));
  EXPECT_TRUE(std::equal(across.begin(), across.end(), s.bytes.begin() + static_cast<long>(at)));
  EXPECT_EQ(stream.origin_bytes(), fetched + 8 * kKiB) << "only the freed block's part fetched";
  stream.Stop();
}

TEST(CopyThroughTest, ConcurrentCopiesShareTheBudget) {
  Fixture s(48 * kMiB);
  constexpr uint64_t kLimit = 8 * kMiB;  // 4 blocks for 6 copies that would hold 24 each
  CopyBudget budget(kLimit);
  Threads threads;
  std::vector<std::unique_ptr<CopyStream>> streams;
  streams.reserve(6);
  for (int c = 0; c < 6; ++c) {
    streams.push_back(
        std::make_unique<CopyStream>(s.origin, s.bytes.size(), threads.runner(), &budget));
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> copies;
  copies.reserve(streams.size());
  for (auto& stream : streams) {
    copies.emplace_back([&, st = stream.get()] { bad += CopyLikeXrdcp(*st, s.bytes); });
  }
  for (std::thread& c : copies) {
    c.join();
  }
  EXPECT_EQ(bad.load(), 0) << "every byte right, none failed";
  EXPECT_LE(budget.peak(), kLimit);
  // Reads of one call go direct together: a pgread's segments are one vector read.
  std::vector<uint8_t> segments(8 * 64 * kKiB);
  std::vector<io::ReadRequest> batch;
  batch.reserve(8);
  for (uint64_t k = 0; k < 8; ++k) {
    batch.push_back({k * 64 * kKiB, {segments.data() + k * 64 * kKiB, 64 * kKiB}, {}});
  }
  const uint64_t requests = streams[0]->origin_requests();
  ASSERT_TRUE(streams[0]->Read(batch));  // blocks read whole and freed: direct
  EXPECT_TRUE(std::equal(segments.begin(), segments.end(), s.bytes.begin()));
  EXPECT_EQ(streams[0]->origin_requests(), requests + 1);
  EXPECT_GT(budget.refused(), 0u) << "the budget was short";
  for (auto& stream : streams) {
    EXPECT_GE(stream->origin_bytes(), s.bytes.size());
    stream->Stop();
  }
  EXPECT_EQ(budget.held(), 0u) << "stopped streams give their blocks back";
  threads.Join();
}

// Reads the proxy sent itself (sendfile of held bytes) count towards a copy's prefix: a copy
// of a file read in order through its held part is recognised as one read through Read is.
TEST(CopyThroughTest, ReadsSentWithoutReadCountTowardsACopy) {
  Fixture s(64 * kMiB);
  CopyCounters counters;
  CopyThrough copy(s.bytes.size(), 0.25, s.origin, Inline(), &counters);
  bool copying = false;
  for (uint64_t off = 0; off < 32 * kMiB && !copying; off += kMiB) {
    copying = copy.NoteServed({off, kMiB});
  }
  EXPECT_TRUE(copying);
  EXPECT_TRUE(copy.copying());
  EXPECT_EQ(counters.copies.load(), 1u);
  EXPECT_EQ(s.origin->bytes(), 0u) << "noting fetches nothing";
}

TEST(CopyThroughTest, AFailedFetchIsServedByTheCachesPath) {
  Fixture s(40 * kMiB);
  auto f = s.Open();
  CopyThrough copy(s.bytes.size(), 0.0, s.origin, Inline(), nullptr);
  std::vector<uint8_t> buf(1 * kMiB);
  for (uint64_t off = 0; off < s.bytes.size(); off += kMiB) {
    if (copy.copying() && off == 20 * kMiB) {
      s.origin->FailNextReads(2, ErrorCode::kIo);  // the stream's fetches fail
    }
    io::ReadRequest r{off, buf, {}};
    uint64_t through = 0;
    ASSERT_TRUE(copy.Read(*f, {&r, 1}, through)) << off;
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), s.bytes.begin() + static_cast<long>(off)));
  }
  EXPECT_TRUE(copy.copying());
}

}  // namespace
}  // namespace ferry::proxy
