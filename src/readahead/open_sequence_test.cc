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

using NameList = std::vector<std::string>;

TEST(OpenSequence, ASortedDirectoryIsPredictedFromItsFirstName) {
  OpenSequence seq;
  const auto listing = Names("ttbar", 6);
  // One open is no sequence yet, but the listing's first name bets on the next kFirstBet files.
  EXPECT_EQ(seq.OnOpen("/d", listing[0], listing), (NameList{listing[1], listing[2], listing[3]}));
  // Each later open in a row predicts kMinDepth files ahead: the one that comes into reach,
  // until the listing ends.
  EXPECT_EQ(seq.OnOpen("/d", listing[1], listing), (NameList{listing[4]}));
  EXPECT_EQ(seq.OnOpen("/d", listing[2], listing), (NameList{listing[5]}));
  for (size_t i = 3; i < 6; ++i) {
    EXPECT_TRUE(seq.OnOpen("/d", listing[i], listing).empty()) << i;
  }
  EXPECT_EQ(seq.predicted(), 5u);
  EXPECT_EQ(seq.used(), 5u);
  EXPECT_EQ(seq.wasted(), 0u);
}

TEST(OpenSequence, AFirstOpenElsewhereInTheListingIsNoSequence) {
  OpenSequence seq;
  const auto listing = Names("f", 6);
  EXPECT_TRUE(seq.OnOpen("/d", listing[3], listing).empty());
  EXPECT_EQ(seq.OnOpen("/d", listing[4], listing), (NameList{listing[5]}));  // now a sequence
  // A bet on a directory's first name that the reader does not take is wasted.
  OpenSequence alone;
  EXPECT_EQ(alone.OnOpen("/e", listing[0], listing).size(), OpenSequence::kFirstBet);
  EXPECT_TRUE(alone.OnOpen("/e", listing[4], listing).empty());
  EXPECT_EQ(alone.wasted(), OpenSequence::kFirstBet);
}

TEST(OpenSequence, AShuffledListStopsBeingPredicted) {
  OpenSequence seq;
  const auto listing = Names("f", 40);
  // 0 (1..3 predicted), 1 (4 predicted; 2..4 wasted), then jumps; now and then two neighbours
  // by chance.
  const int order[] = {0, 1, 7, 8, 20, 21, 3, 4, 30, 31, 12, 13, 25, 26, 38, 39, 5, 6, 15, 16};
  for (int i : order) {
    seq.OnOpen("/d", listing[static_cast<size_t>(i)], listing);
  }
  EXPECT_EQ(seq.used(), 1u);
  // The first jump wastes the predictions of 1, and they lead by kMaxWastedLead or more: no
  // prediction after that.
  EXPECT_EQ(seq.predicted(), 1 + OpenSequence::kMinDepth);
  EXPECT_EQ(seq.wasted(), OpenSequence::kMinDepth);
}

TEST(OpenSequence, AFileTheReaderSkipsIsWastedAndTheSequenceGoesOn) {
  OpenSequence seq;
  const auto listing = Names("s", 8);
  seq.OnOpen("/d", listing[0], listing);                                     // 1, 2, 3
  EXPECT_EQ(seq.OnOpen("/d", listing[1], listing), (NameList{listing[4]}));  // up to 1 + 3
  // 2 is skipped (a file the reader's list leaves out): 3 was predicted, so it still follows.
  EXPECT_EQ(seq.OnOpen("/d", listing[3], listing), (NameList{listing[5], listing[6]}));
  EXPECT_EQ(seq.used(), 2u);  // 1 and 3
  EXPECT_EQ(seq.wasted(), 1u);
  EXPECT_EQ(seq.OnOpen("/d", listing[4], listing), (NameList{listing[7]}));
  EXPECT_EQ(seq.used(), 3u);
}

TEST(OpenSequence, AReaderThatCatchesUpIsPredictedFurtherAheadAndASlowOneLessFar) {
  OpenSequence seq;
  const auto listing = Names("deep", 30);
  seq.OnOpen("/d", listing[0], listing);                                     // 1..3
  EXPECT_EQ(seq.OnOpen("/d", listing[1], listing), (NameList{listing[4]}));  // up to 1 + 3
  // The reader opened 2 while it was still being fetched: twice as far ahead, up to kMaxDepth.
  seq.CaughtUp("/d");
  EXPECT_EQ(seq.depth("/d"), 2 * OpenSequence::kMinDepth);
  EXPECT_EQ(seq.OnOpen("/d", listing[2], listing),
            (NameList{listing[5], listing[6], listing[7], listing[8]}));  // up to 2 + 6
  seq.CaughtUp("/d");
  seq.CaughtUp("/d");
  EXPECT_EQ(seq.depth("/d"), OpenSequence::kMaxDepth);
  EXPECT_EQ(seq.OnOpen("/d", listing[3], listing),
            (NameList{listing[9], listing[10], listing[11]}));  // up to 3 + 8
  // 10 was dropped unopened (the reader came too slowly): half as far, and 10 is predicted again
  // once an open brings it into reach (6 + 4).
  seq.Expired("/d", listing[10]);
  EXPECT_EQ(seq.depth("/d"), OpenSequence::kMaxDepth / 2);
  EXPECT_TRUE(seq.OnOpen("/d", listing[4], listing).empty());  // up to 8: all pending
  EXPECT_TRUE(seq.OnOpen("/d", listing[5], listing).empty());  // up to 9
  EXPECT_EQ(seq.OnOpen("/d", listing[6], listing), (NameList{listing[10]}));
  EXPECT_TRUE(seq.OnOpen("/d", listing[7], listing).empty());  // up to 11
  EXPECT_EQ(seq.used(), 7u);
  EXPECT_EQ(seq.wasted(), 0u);
}

TEST(OpenSequence, TwoInterleavedDatasetsAreTwoSequences) {
  OpenSequence seq;
  const auto a = Names("a", 5);
  const auto b = Names("b", 5);
  for (size_t i = 0; i < 5; ++i) {
    auto pa = seq.OnOpen("/data/a", a[i], a);
    auto pb = seq.OnOpen("/data/b", b[i], b);
    if (i == 0) {  // each first name bets on its next files
      EXPECT_EQ(pa, (NameList{a[1], a[2], a[3]}));
      EXPECT_EQ(pb, (NameList{b[1], b[2], b[3]}));
    } else if (i == 1) {
      EXPECT_EQ(pa, (NameList{a[4]}));
      EXPECT_EQ(pb, (NameList{b[4]}));
    } else {
      EXPECT_TRUE(pa.empty() && pb.empty()) << i;
    }
  }
  EXPECT_EQ(seq.used(), 8u);
  EXPECT_EQ(seq.wasted(), 0u);
}

TEST(OpenSequence, TheNextDatasetIsPredictedFromItsFirstOpenAtTheDepthReached) {
  OpenSequence seq;
  const auto a = Names("zlib", 5);
  const auto b = Names("lzma", 12);
  for (size_t i = 0; i < a.size(); ++i) {
    seq.OnOpen("/data/a", a[i], a);
    if (i == 2) {
      seq.CaughtUp("/data/a");  // the reader caught up: 2 x kMinDepth ahead
    }
  }
  // The reader ended /data/a through its predictions and starts /data/b at its first name.
  const size_t depth = 2 * OpenSequence::kMinDepth;
  EXPECT_EQ(seq.OnOpen("/data/b", b[0], b), NameList(b.begin() + 1, b.begin() + 1 + depth));
  EXPECT_EQ(seq.depth("/data/b"), depth);
  EXPECT_EQ(seq.OnOpen("/data/b", b[1], b), (NameList{b[1 + depth]}));
  EXPECT_EQ(seq.wasted(), 0u);
}

TEST(OpenSequence, AFirstNameAfterAnUnfinishedSequenceIsOnlyABet) {
  OpenSequence seq;
  const auto a = Names("a", 6);
  const auto b = Names("b", 6);
  seq.OnOpen("/data/a", a[0], a);
  seq.OnOpen("/data/a", a[1], a);
  seq.OnOpen("/data/a", a[2], a);
  // Left /data/a before its end: /data/b's first name only bets on its next kFirstBet files; so
  // does a first name of a directory after another's unpredicted last file.
  EXPECT_EQ(seq.OnOpen("/data/b", b[0], b), (NameList{b[1], b[2], b[3]}));
  seq.OnOpen("/data/c", b[5], b);
  EXPECT_EQ(seq.OnOpen("/data/d", a[0], a), (NameList{a[1], a[2], a[3]}));
  // A directory's first open that is not its first name does not go on either.
  seq.OnOpen("/data/a", a[3], a);
  seq.OnOpen("/data/a", a[4], a);
  seq.OnOpen("/data/a", a[5], a);  // took a prediction, the listing's end
  EXPECT_TRUE(seq.OnOpen("/data/e", b[1], b).empty());
}

TEST(OpenSequence, NoListingNoPrediction) {
  OpenSequence seq;
  const auto listing = Names("x", 4);
  EXPECT_TRUE(seq.OnOpen("/d", listing[0], {}).empty());
  EXPECT_TRUE(seq.OnOpen("/d", listing[1], {}).empty());
  // The listing arrives: the sequence starts from where it is found.
  EXPECT_TRUE(seq.OnOpen("/d", listing[2], listing).empty());
  EXPECT_TRUE(seq.OnOpen("/d", listing[3], listing).empty());  // the last file
  EXPECT_EQ(seq.predicted(), 0u);
}

}  // namespace
}  // namespace ferry::readahead
