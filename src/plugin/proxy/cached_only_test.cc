#include "plugin/proxy/cached_only.h"

#include <gtest/gtest.h>

#include "cache/cache.h"
#include "cache/testing/memory_origin.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::proxy {
namespace {

TEST(CachedOnlyTest, HeldBytesReadOthersFailWithoutOrigin) {
  testing::TempDir tmp;
  cache::Config c = testing::CacheTestConfig(tmp.path() + "/c");
  c.readahead = false;
  auto cache = *cache::Cache::Create(c);
  const std::vector<uint8_t> bytes = testing::PseudoRandomBytes(size_t{64} << 10, 7);
  {
    auto f = cache->Open("root://h//f", std::make_shared<cache::MemoryOrigin>(bytes));
    ASSERT_TRUE(f);
    std::vector<uint8_t> buf(8192);
    ASSERT_TRUE((*f)->Read(0, buf));
    (*f)->Close();
    ASSERT_TRUE(cache->Flush());
  }
  auto f = cache->Open("root://h//f", std::make_shared<CachedOnlyOrigin>());
  ASSERT_TRUE(f);
  std::vector<uint8_t> buf(4096);
  ASSERT_TRUE((*f)->Read(4096, buf));
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), bytes.begin() + 4096));
  // Partly held: the whole read fails, with the error that says why.
  Status st = (*f)->Read(6000, buf);
  ASSERT_FALSE(st);
  EXPECT_TRUE(IsNotCached(st.error())) << st.error().ToString();
  (*f)->Close();
  // No entry at all: the open fails the same way.
  auto g = cache->Open("root://h//other", std::make_shared<CachedOnlyOrigin>());
  ASSERT_FALSE(g);
  EXPECT_TRUE(IsNotCached(g.error())) << g.error().ToString();
  EXPECT_FALSE(IsNotCached(NotFoundError("no such file")));
}

TEST(CachedOnlyTest, OpaqueValues) {
  EXPECT_TRUE(OnlyIfCachedValue("1"));
  EXPECT_TRUE(OnlyIfCachedValue("true"));
  EXPECT_FALSE(OnlyIfCachedValue("0"));
  EXPECT_FALSE(OnlyIfCachedValue(""));
  EXPECT_FALSE(OnlyIfCachedValue(nullptr));
}

}  // namespace
}  // namespace ferry::proxy
