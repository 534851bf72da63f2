// The generator's two-thread pipeline (label concurrency: also run under TSan).
#include "gen/batch_pipeline.h"

#include <gtest/gtest.h>

#include "gen/object_resampler.h"
#include "testing/testing.h"

namespace ferry::gen {
namespace {

std::vector<std::vector<rootio::Column>> Collect(const EventTemplate& t,
                                                 bool threaded,
                                                 size_t take) {
  ObjectResampler r(t, 21);
  EventIdSequence ids(21);
  BatchPipeline p(r, ids, {100, 250, 1, 300, 77, 200}, threaded);
  std::vector<std::vector<rootio::Column>> out;
  while (out.size() < take) {
    const std::vector<rootio::Column>* b = p.Next();
    if (b == nullptr) {
      break;
    }
    out.push_back(*b);
  }
  return out;
}

TEST(BatchPipeline, ThreadedGivesTheSameBatchesAsInline) {
  FERRY_REQUIRE_ROOT_DATA();
  auto t = LoadTemplate(testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root"));
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  auto inline_batches = Collect(*t, false, 100);
  auto threaded = Collect(*t, true, 100);
  ASSERT_EQ(inline_batches.size(), 6u);
  ASSERT_EQ(threaded.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    for (size_t b = 0; b < t->branches.size(); ++b) {
      ASSERT_EQ(inline_batches[i][b].bytes, threaded[i][b].bytes) << i << " " << b;
      ASSERT_EQ(inline_batches[i][b].offsets, threaded[i][b].offsets) << i << " " << b;
    }
  }
}

TEST(BatchPipeline, StopsCleanlyWhenTheConsumerLeavesEarly) {
  FERRY_REQUIRE_ROOT_DATA();
  auto t = LoadTemplate(testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root"));
  ASSERT_TRUE(t.has_value());
  for (size_t take : {0u, 1u, 2u, 3u}) {
    auto got = Collect(*t, true, take);
    EXPECT_EQ(got.size(), take);
  }
}

}  // namespace
}  // namespace ferry::gen
