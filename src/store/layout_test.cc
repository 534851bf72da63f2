#include "store/layout.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace ferry::store {
namespace {

TEST(Layout, ComposeDecomposeRoundTrip) {
  Layout l = *Layout::Make(3, 5, 7, 64, 4096);
  EXPECT_EQ(l.total_slots(), 105u);
  uint64_t expect = 0;
  for (uint64_t r = 0; r < 3; ++r) {
    for (uint64_t lu = 0; lu < 5; ++lu) {
      for (uint64_t e = 0; e < 7; ++e) {
        Slots s{r, lu, e};
        ASSERT_TRUE(l.Contains(s));
        uint64_t entry = l.Compose(s);
        EXPECT_EQ(entry, expect++);  // mixed radix: dense and ordered
        EXPECT_EQ(l.Decompose(entry), s);
        uint64_t off = l.RecordOffset(lu, e);
        EXPECT_EQ(off, 4096 + (lu * 7 + e) * 64);
        EXPECT_EQ(l.FromRecordOffset(r, off), s);
      }
    }
  }
  EXPECT_FALSE(l.Contains({3, 0, 0}));
  EXPECT_FALSE(l.Contains({0, 5, 0}));
  EXPECT_FALSE(l.Contains({0, 0, 7}));
}

TEST(Layout, RejectsZeroExtents) {
  EXPECT_EQ(Layout::Make(0, 1, 1, 8, 0).error().code(), ErrorCode::kCorruption);
  EXPECT_EQ(Layout::Make(1, 0, 1, 8, 0).error().code(), ErrorCode::kCorruption);
  EXPECT_EQ(Layout::Make(1, 1, 0, 8, 0).error().code(), ErrorCode::kCorruption);
  EXPECT_EQ(Layout::Make(1, 1, 1, 0, 0).error().code(), ErrorCode::kCorruption);
}

TEST(Layout, RejectsOverflow) {
  const uint64_t big = uint64_t{1} << 32;
  EXPECT_FALSE(Layout::Make(big, big, 1, 8, 0).has_value());                // R*L*E
  EXPECT_FALSE(Layout::Make(1, big, big, 8, 0).has_value());                // L*E
  EXPECT_FALSE(Layout::Make(1, big, uint64_t{1} << 29, 8, 0).has_value());  // * record size
  EXPECT_FALSE(Layout::Make(1, 1, 1, 8, UINT64_MAX - 4).has_value());       // + index offset
  EXPECT_FALSE(Layout::Make(1, 1, 1, 8, static_cast<uint64_t>(INT64_MAX)).has_value());
  // Just fits: (2^31 - 1) * 2^28 slots of 8 bytes plus an offset stays below 2^63.
  EXPECT_TRUE(Layout::Make(1, (uint64_t{1} << 31) - 1, uint64_t{1} << 28, 8, 4096).has_value());
  // Extremes of the run axis alone.
  EXPECT_TRUE(Layout::Make(UINT64_MAX, 1, 1, 8, 0).has_value());
  Layout l = *Layout::Make(UINT64_MAX, 1, 1, 8, 0);
  EXPECT_EQ(l.Decompose(UINT64_MAX - 1).run, UINT64_MAX - 1);
}

}  // namespace
}  // namespace ferry::store
