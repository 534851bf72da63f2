// OpenSequence on recorded open sequences: a sorted directory, a shuffled list, two datasets
// read interleaved, a listing not known yet.
#include "readahead/open_sequence.h"

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ferry::readahead {
namespace {

std::vector<std::string> Names(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "%s_%04d.root", prefix.c_str(), i);
    out.emplace_back(name);
  }
  return out;  // sorted: zero-padded numbers
}

TEST(OpenSequence, ASortedDirectoryIsPredictedFromItsSecondOpen) {
  OpenSequence seq;
  const auto listing = Names("ttbar", 6);
  EXPECT_FALSE(seq.OnOpen("/d", listing[0], listing));  // one open is no sequence yet
  for (int i = 1; i < 5; ++i) {
    auto next = seq.OnOpen("/d", listing[static_cast<size_t>(i)], listing);
    ASSERT_TRUE(next) << i;
    EXPECT_EQ(*next, listing[static_cast<size_t>(i + 1)]);
  }
  EXPECT_FALSE(seq.OnOpen("/d", listing[5], listing));  // the last file: nothing after it
  EXPECT_EQ(seq.predicted(), 4u);
  EXPECT_EQ(seq.used(), 4u);
  EXPECT_EQ(seq.wasted(), 0u);
}

TEST(OpenSequence, AShuffledListStopsBeingPredicted) {
  OpenSequence seq;
  const auto listing = Names("f", 40);
  // 0,1 (a prediction of 2, wasted), then jumps; now and then two neighbours by chance.
  const int order[] = {0, 1, 7, 8, 20, 21, 3, 4, 30, 31, 12, 13, 25, 26, 38, 39, 5, 6, 15, 16};
  for (int i : order) {
    seq.OnOpen("/d", listing[static_cast<size_t>(i)], listing);
  }
  EXPECT_EQ(seq.used(), 0u);
  // Predictions stop once the wasted ones lead by kMaxWastedLead.
  EXPECT_EQ(seq.predicted(), OpenSequence::kMaxWastedLead);
  EXPECT_LE(seq.wasted(), OpenSequence::kMaxWastedLead);
}

TEST(OpenSequence, TwoInterleavedDatasetsAreTwoSequences) {
  OpenSequence seq;
  const auto a = Names("a", 5);
  const auto b = Names("b", 5);
  for (size_t i = 0; i < 5; ++i) {
    auto pa = seq.OnOpen("/data/a", a[i], a);
    auto pb = seq.OnOpen("/data/b", b[i], b);
    if (i >= 1 && i + 1 < 5) {
      ASSERT_TRUE(pa && pb) << i;
      EXPECT_EQ(*pa, a[i + 1]);
      EXPECT_EQ(*pb, b[i + 1]);
    }
  }
  EXPECT_EQ(seq.used(), 6u);
  EXPECT_EQ(seq.wasted(), 0u);
}

TEST(OpenSequence, NoListingNoPrediction) {
  OpenSequence seq;
  const auto listing = Names("x", 4);
  EXPECT_FALSE(seq.OnOpen("/d", listing[0], {}));
  EXPECT_FALSE(seq.OnOpen("/d", listing[1], {}));
  // The listing arrives: the sequence starts from where it is found.
  EXPECT_FALSE(seq.OnOpen("/d", listing[2], listing));
  auto next = seq.OnOpen("/d", listing[3], listing);
  EXPECT_FALSE(next);  // the last file
  EXPECT_EQ(seq.predicted(), 0u);
}

}  // namespace
}  // namespace ferry::readahead
