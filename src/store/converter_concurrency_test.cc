// The converter on several threads (TSan runs this, label concurrency): stores made with 1, 2
// and 4 threads answer every pick and scan with the same values, and their shards are
// byte-identical (the pool changes who does the work, never the bytes).
#include <gtest/gtest.h>

#include "store/converter.h"
#include "store/store.h"
#include "testing/testing.h"

namespace ferry::store {
namespace {

TEST(ConverterThreads, SameBytesOnAnyNumberOfThreads) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::string path = testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root");
  std::vector<std::vector<uint8_t>> shards;
  for (size_t threads : {1u, 2u, 4u}) {
    testing::TempDir dir;
    ConvertOptions o;
    o.inputs = {path};  // small blocks: many jobs in flight on the pool
    o.out_dir = dir.path();
    o.block_size = 2048;
    o.log2_ks = 5;
    o.threads = threads;
    auto rep = Convert(o);
    ASSERT_TRUE(rep.has_value()) << rep.error().ToString();
    auto s = std::move(*Store::Open(dir.path()));
    auto v = s->Verify();
    ASSERT_TRUE(v.has_value()) << v.error().ToString();
    EXPECT_EQ(v->records, 200u);
    shards.push_back(testing::ReadWholeFile(dir.path() + "/" + ShardFileName(1, 1)));
  }
  EXPECT_EQ(shards[0], shards[1]);
  EXPECT_EQ(shards[0], shards[2]);
}

}  // namespace
}  // namespace ferry::store
