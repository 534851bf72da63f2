#include "gen/event_ids.h"

#include <set>
#include <tuple>

#include <gtest/gtest.h>

namespace ferry::gen {
namespace {

TEST(EventIds, SortedUniqueTriplesWithRealisticStructure) {
  EventIdSequence seq(42);
  EventId prev = seq.Next();
  std::set<uint32_t> runs = {prev.run};
  int64_t lumi_size = 1;
  int64_t lumis = 0;
  bool above_32_bits = false;
  constexpr int kEvents = 400000;
  for (int i = 1; i < kEvents; ++i) {
    EventId id = seq.Next();
    ASSERT_LT(std::tie(prev.run, prev.lumi, prev.event), std::tie(id.run, id.lumi, id.event));
    if (id.run != prev.run || id.lumi != prev.lumi) {
      if (lumis > 0) {  // a complete lumi block
        EXPECT_GE(lumi_size, 200);
        EXPECT_LE(lumi_size, 500);
      }
      ++lumis;
      lumi_size = 0;
      if (id.run != prev.run) {
        EXPECT_EQ(id.lumi, 1u);
      } else {
        EXPECT_EQ(id.lumi, prev.lumi + 1);
        EXPECT_GT(id.event, prev.event);
      }
    } else {
      EXPECT_GT(id.event, prev.event);
      EXPECT_LE(id.event - prev.event, 64u);  // sparse, but not wildly
    }
    above_32_bits = above_32_bits || id.event > 0xFFFFFFFFull;
    runs.insert(id.run);
    ++lumi_size;
    prev = id;
  }
  EXPECT_GE(runs.size(), 2u);
  EXPECT_GT(lumis, kEvents / 500);
  EXPECT_TRUE(above_32_bits || runs.size() < 3);
}

TEST(EventIds, DeterministicForASeed) {
  EventIdSequence a(7), b(7), c(8);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    EventId x = a.Next(), y = b.Next(), z = c.Next();
    ASSERT_EQ(x.run, y.run);
    ASSERT_EQ(x.lumi, y.lumi);
    ASSERT_EQ(x.event, y.event);
    differs = differs || x.event != z.event || x.run != z.run;
  }
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace ferry::gen
