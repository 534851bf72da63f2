// SegmentCrcs: pgread checksums from the cache's stored page CRCs, computed elsewhere.
#include "plugin/proxy/segment_crcs.h"

#include <vector>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "cache/cache.h"
#include "cache/testing/memory_origin.h"
#include "testing/testing.h"

namespace ferry::proxy {
namespace {

using cache::Cache;
using cache::Config;
using cache::MemoryOrigin;

std::vector<uint32_t> Computed(uint64_t offset, const std::vector<uint8_t>& data) {
  std::vector<uint32_t> out;
  for (uint64_t pos = offset; pos < offset + data.size();) {
    const uint64_t stop = std::min<uint64_t>(offset + data.size(), (pos / 4096 + 1) * 4096);
    out.push_back(crc32c::Value(data.data() + (pos - offset), stop - pos));
    pos = stop;
  }
  return out;
}

TEST(SegmentCrcs, StoredForWholeHeldPagesComputedElsewhere) {
  testing::TempDir dir;
  const auto bytes = testing::PseudoRandomBytes(10 * 4096 + 100, 3);
  auto origin = std::make_shared<MemoryOrigin>(bytes);
  Config config;
  config.dir = dir.path() + "/cache";
  config.min_free_bytes = 0;
  config.sync = false;
  config.publish_ms = 10;
  auto cache = Cache::Create(config);
  ASSERT_TRUE(cache);
  auto file = (*cache)->Open("root://o:1094//f", origin);
  ASSERT_TRUE(file);
  // Cold: the write-behind may or may not have stored the three whole pages by now (it runs as
  // soon as the answer is out; under load it can win the race), so only the CRCs are exact.
  const uint64_t off = 4096 - 10;
  std::vector<uint8_t> data(3 * 4096 + 20);
  ASSERT_TRUE((*file)->Read(off, data));
  std::vector<uint32_t> crcs(5);
  EXPECT_LE(SegmentCrcs(**file, off, data, crcs), 3u);
  EXPECT_EQ(crcs, Computed(off, data));
  ASSERT_TRUE((*cache)->Flush());
  // Warm: the three whole pages inside take their stored CRCs; the two edges are computed.
  std::fill(data.begin(), data.end(), 0);
  ASSERT_TRUE((*file)->Read(off, data));
  std::fill(crcs.begin(), crcs.end(), 0);
  EXPECT_EQ(SegmentCrcs(**file, off, data, crcs), 3u);
  EXPECT_EQ(crcs, Computed(off, data));
  // The short last page is a whole page too.
  std::vector<uint8_t> tail(100);
  ASSERT_TRUE((*file)->Read(10 * 4096, tail));
  ASSERT_TRUE((*cache)->Flush());
  ASSERT_TRUE((*file)->Read(10 * 4096, tail));
  std::vector<uint32_t> one(1);
  EXPECT_EQ(SegmentCrcs(**file, 10 * 4096, tail, one), 1u);
  EXPECT_EQ(one[0], crc32c::Value(tail.data(), tail.size()));
}

}  // namespace
}  // namespace ferry::proxy
