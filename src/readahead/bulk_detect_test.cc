// Bulk readers: copy tools by name, copies by their pattern, analyses not mistaken for copies;
// a handle that reads as a copy passes through uncached (bypassed_bytes), one that does not is
// cached.
#include "readahead/bulk_detect.h"

#include <gtest/gtest.h>

#include "cache/cache.h"
#include "cache/testing/memory_origin.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::readahead {
namespace {

using cache::Cache;
using cache::CachedFile;
using cache::Config;
using cache::Counter;
using cache::MemoryOrigin;
using cache::OpenOptions;

const std::vector<std::string> kTools = Config{}.bypass_tools;

TEST(IsCopyTool, ByExecutableOrScript) {
  EXPECT_TRUE(IsCopyTool("/usr/bin/xrdcp", {"xrdcp", "root://a//f", "/tmp/f"}, kTools));
  EXPECT_TRUE(IsCopyTool("/opt/root/bin/hadd", {"hadd", "out.root", "in.root"}, kTools));
  EXPECT_TRUE(
      IsCopyTool("/usr/bin/python3.11", {"python3", "-u", "/usr/bin/gfal-copy", "a"}, kTools));
  EXPECT_FALSE(IsCopyTool("/usr/bin/python3.11", {"python3", "analysis.py", "xrdcp"}, kTools));
  EXPECT_FALSE(IsCopyTool("/usr/bin/python3", {"python3", "-c", "import xrdcp"}, kTools));
  EXPECT_FALSE(IsCopyTool("/usr/bin/root.exe", {"root.exe", "-b", "ana.C"}, kTools));
  EXPECT_FALSE(IsCopyTool("/usr/bin/xrdcp", {"xrdcp"}, {"hadd"}));
}

std::vector<io::ReadRequest> Reads(std::initializer_list<std::pair<uint64_t, uint64_t>> ranges) {
  static std::vector<uint8_t> sink(64 << 20);
  std::vector<io::ReadRequest> out;
  for (auto [offset, length] : ranges) {
    out.push_back({offset, {sink.data(), length}, {}});
  }
  return out;
}

TEST(BulkDetector, ASequentialCopyIsBulkAfterItsShare) {
  constexpr uint64_t kSize = 100 << 20;
  constexpr uint64_t kChunk = 8 << 20;
  BulkDetector d(kSize, 25);
  EXPECT_FALSE(d.Note(Reads({{0, kChunk}, {kChunk, kChunk}})));
  // xrdcp's parallel chunks arrive out of order.
  EXPECT_FALSE(d.Note(Reads({{3 * kChunk, kChunk}})));
  EXPECT_TRUE(d.Note(Reads({{2 * kChunk, kChunk}})));  // prefix 32 MiB >= 25 MiB
  EXPECT_TRUE(d.bulk());
}

TEST(BulkDetector, AnAnalysisReadingManyBranchesIsNot) {
  constexpr uint64_t kSize = 100 << 20;
  BulkDetector d(kSize, 25);
  EXPECT_FALSE(d.Note(Reads({{0, 300}, {1000, 4000}})));  // header, keys
  // 30% of the branches of each cluster: three baskets out of every ten, one vector read each.
  constexpr uint64_t kBasket = 100 << 10;
  for (uint64_t cluster = 0; cluster < 100; ++cluster) {
    const uint64_t base = 8192 + cluster * 10 * kBasket;
    EXPECT_FALSE(
        d.Note(Reads({{base, kBasket}, {base + kBasket, kBasket}, {base + 5 * kBasket, kBasket}})));
  }
  EXPECT_LT(d.prefix(), kSize / 10);
}

TEST(BulkDetector, SmallFilesAndSmallReadsAreNot) {
  BulkDetector small(8 << 20, 25);
  EXPECT_FALSE(small.Note(Reads({{0, 8 << 20}})));
  BulkDetector tiny_reads(32 << 20, 25);
  for (uint64_t off = 0; off < (16 << 20); off += 4096) {
    EXPECT_FALSE(tiny_reads.Note(Reads({{off, 4096}})));
  }
}

TEST(Bypass, ACopyPassesThroughAndAnAnalysisIsCached) {
  testing::TempDir dir;
  Config config = testing::CacheTestConfig(dir.path() + "/cache");
  auto cache = Cache::Create(config).value();
  std::vector<uint8_t> bytes(40 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  }
  auto origin = std::make_shared<MemoryOrigin>(bytes, 1700000000, 1);
  OpenOptions watch;
  watch.detect_bulk = true;
  // A copy in 4 MiB reads: after 25% of the file, nothing more is cached.
  {
    auto f = cache->Open("root://o.example//copy.bin", origin, watch).value();
    std::vector<uint8_t> buf(4 << 20);
    for (uint64_t off = 0; off < bytes.size(); off += buf.size()) {
      ASSERT_TRUE(f->Read(off, buf));
      ASSERT_TRUE(std::equal(buf.begin(), buf.end(), bytes.begin() + static_cast<long>(off)));
    }
    EXPECT_TRUE(f->bypassing());
    f->Close();
  }
  ASSERT_TRUE(cache->Flush());
  const uint64_t bypassed = cache->counters().Get(Counter::kBypassedBytes);
  // The third read takes the prefix past 10 MiB (25%): it and the rest pass through.
  EXPECT_EQ(bypassed, bytes.size() - (8 << 20));
  // A copy tool: nothing cached at all.
  OpenOptions tool = watch;
  tool.bulk_reader = true;
  {
    auto f = cache->Open("root://o.example//tool.bin", origin, tool).value();
    std::vector<uint8_t> buf(1 << 20);
    ASSERT_TRUE(f->Read(0, buf));
    EXPECT_TRUE(f->bypassing());
    f->Close();
  }
  EXPECT_EQ(cache->counters().Get(Counter::kBypassedBytes), bypassed + (1 << 20));
  // Scattered reads of a third of the file are cached: a second pass hits.
  auto scattered = [&](CachedFile& f) {
    std::vector<uint8_t> buf(64 << 10);
    for (uint64_t off = 0; off < bytes.size(); off += 3 * buf.size()) {
      ASSERT_TRUE(f.Read(off, buf));
    }
  };
  {
    auto f = cache->Open("root://o.example//ana.bin", origin, watch).value();
    scattered(*f);
    EXPECT_FALSE(f->bypassing());
    f->Close();
  }
  ASSERT_TRUE(cache->Flush());
  const uint64_t before = origin->bytes();
  auto f = cache->Open("root://o.example//ana.bin", origin, watch).value();
  scattered(*f);
  EXPECT_EQ(origin->bytes(), before);
  EXPECT_EQ(cache->counters().Get(Counter::kBypassedBytes), bypassed + (1 << 20));
}

}  // namespace
}  // namespace ferry::readahead
