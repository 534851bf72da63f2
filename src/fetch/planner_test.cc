#include "fetch/planner.h"

#include <map>
#include <random>

#include <gtest/gtest.h>

#include "fetch/channel_pool.h"
#include "fetch/counters.h"
#include "fetch/range.h"

namespace ferry::fetch {
namespace {

constexpr uint64_t kPage = 4096;

// Test double: per-page held intervals, plus a helper that records fetched bytes the way the
// page store would (the union of intervals in a page must stay one interval).
class MapCover final : public CoverageMap {
 public:
  explicit MapCover(uint64_t file_size, uint32_t page_size = kPage)
      : file_size_(file_size), page_size_(page_size) {}
  PageCover Cover(uint64_t page) const override {
    auto it = pages_.find(page);
    return it == pages_.end() ? PageCover{} : it->second;
  }
  void Set(uint64_t page, uint32_t lo, uint32_t hi) { pages_[page] = {lo, hi}; }
  // Adds fetched bytes; fails the test when a page would hold two disjoint intervals.
  void Add(const Range& r) {
    for (uint64_t p = r.offset / page_size_; p <= (r.end() - 1) / page_size_; ++p) {
      uint64_t start = p * page_size_;
      auto lo = static_cast<uint32_t>(std::max(r.offset, start) - start);
      auto hi = static_cast<uint32_t>(std::min(r.end(), start + page_size_) - start);
      PageCover& c = pages_[p];
      if (c.empty()) {
        c = {lo, hi};
      } else {
        ASSERT_TRUE(hi >= c.lo && lo <= c.hi) << "disjoint interval in page " << p;
        c = {std::min(c.lo, lo), std::max(c.hi, hi)};
      }
    }
  }
  void AddPlan(const FetchPlan& plan) {
    for (const Range& r : plan.chunks) {
      Add(r);
    }
  }

 private:
  uint64_t file_size_;
  uint32_t page_size_;
  std::map<uint64_t, PageCover> pages_;
};

FetchPlan PlanOf(const Planner& planner,
                 std::vector<Range> wanted,
                 uint64_t size,
                 const CoverageMap& cover) {
  PlanScratch scratch;
  FetchPlan plan;
  planner.Plan(wanted, size, cover, scratch, plan);
  return plan;
}

TEST(RangeTest, NormalizeMergesOverlapsAndNeighbours) {
  std::vector<Range> r = {{100, 10}, {0, 50}, {40, 20}, {110, 5}, {200, 0}, {300, 1}};
  Normalize(r);
  EXPECT_EQ(r, (std::vector<Range>{{0, 60}, {100, 15}, {300, 1}}));
  EXPECT_TRUE(IsNormalized(r));
  EXPECT_FALSE(IsNormalized(std::vector<Range>{{0, 10}, {10, 5}}));
}

TEST(RangeTest, SubtractSplitsAndReportsOverlap) {
  std::vector<Range> a = {{0, 100}, {200, 100}};
  std::vector<Range> b = {{10, 10}, {90, 120}, {250, 10}, {290, 100}};
  std::vector<Range> out, overlap;
  Subtract(a, b, out, &overlap);
  EXPECT_EQ(out, (std::vector<Range>{{0, 10}, {20, 70}, {210, 40}, {260, 30}}));
  EXPECT_EQ(overlap, (std::vector<Range>{{10, 10}, {90, 10}, {200, 10}, {250, 10}, {290, 10}}));
  EXPECT_EQ(TotalBytes(out) + TotalBytes(overlap), TotalBytes(a));
}

TEST(PlannerTest, EmptyCacheExactFetchesOnlyWantedBytes) {
  Planner planner({});
  NothingCovered none;
  FetchPlan plan = PlanOf(planner, {{5000, 3000}, {100, 10}}, 1 << 20, none);
  ASSERT_EQ(plan.reads.size(), 1u);
  EXPECT_EQ(plan.chunks, (std::vector<Range>{{100, 10}, {5000, 3000}}));
  EXPECT_EQ(plan.bytes, 3010u);
}

TEST(PlannerTest, RoundToPagesFetchesWholePages) {
  PlannerConfig c;
  c.round_to_pages = true;
  Planner planner(c);
  NothingCovered none;
  FetchPlan plan = PlanOf(planner, {{5000, 3000}, {100, 10}}, 1 << 20, none);
  // Both ranges fall in adjacent pages: one run of two pages, one chunk.
  EXPECT_EQ(plan.chunks, (std::vector<Range>{{0, 2 * kPage}}));
  plan = PlanOf(planner, {{100, 10}, {9000, 10}}, 1 << 20, none);
  EXPECT_EQ(plan.chunks, (std::vector<Range>{{0, kPage}, {2 * kPage, kPage}}));
}

TEST(PlannerTest, HeldPagesAreDropped) {
  Planner planner({});
  MapCover cover(1 << 20);
  cover.Set(1, 0, kPage);
  cover.Set(2, 0, kPage);
  // Wants pages 0..3; only pages 0 and 3 are missing.
  FetchPlan plan = PlanOf(planner, {{0, 4 * kPage}}, 1 << 20, cover);
  EXPECT_EQ(plan.chunks, (std::vector<Range>{{0, kPage}, {3 * kPage, kPage}}));
  EXPECT_EQ(plan.reads.size(), 1u);
  // Everything held: no request at all.
  cover.Set(0, 0, kPage);
  cover.Set(3, 0, kPage);
  plan = PlanOf(planner, {{0, 4 * kPage}}, 1 << 20, cover);
  EXPECT_TRUE(plan.reads.empty());
  EXPECT_TRUE(planner.AllHeld(std::vector<Range>{{10, 4 * kPage - 20}}, 1 << 20, cover));
}

TEST(PlannerTest, PartlyHeldPageFetchesTouchingPieces) {
  Planner planner({});
  MapCover cover(1 << 20);
  cover.Set(0, 1000, 2000);
  // Inside the held interval: hit.
  EXPECT_TRUE(PlanOf(planner, {{1200, 100}}, 1 << 20, cover).chunks.empty());
  // Left of it, not touching: the fetch is extended up to the held interval.
  EXPECT_EQ(PlanOf(planner, {{100, 10}}, 1 << 20, cover).chunks, (std::vector<Range>{{100, 900}}));
  // Straddling both sides.
  EXPECT_EQ(PlanOf(planner, {{900, 1200}}, 1 << 20, cover).chunks,
            (std::vector<Range>{{900, 100}, {2000, 100}}));
  // Right side continuing into the next (empty) page: one merged run.
  EXPECT_EQ(PlanOf(planner, {{2500, 3000}}, 1 << 20, cover).chunks,
            (std::vector<Range>{{2000, 3500}}));
}

TEST(PlannerTest, FetchedBytesKeepOneIntervalPerPage) {
  // Random reads against a cache that records what it fetched: every page keeps exactly one
  // held interval (MapCover::Add asserts it) and a second pass needs nothing.
  Planner planner({});
  const uint64_t size = 8 << 20;
  MapCover cover(size);
  std::mt19937_64 rng(3);
  std::vector<Range> all;
  for (int round = 0; round < 200; ++round) {
    std::vector<Range> want;
    for (int k = 0; k < 16; ++k) {
      uint64_t off = rng() % (size - 20000);
      want.push_back({off, 1 + rng() % 20000});
    }
    FetchPlan plan = PlanOf(planner, want, size, cover);
    cover.AddPlan(plan);
    ASSERT_FALSE(HasFailure());
    all.insert(all.end(), want.begin(), want.end());
    EXPECT_TRUE(PlanOf(planner, want, size, cover).reads.empty());
  }
  Normalize(all);
  EXPECT_TRUE(planner.AllHeld(all, size, cover));
}

TEST(PlannerTest, TwoRangesInOneEmptyPageBecomeOneInterval) {
  Planner planner({});
  NothingCovered none;
  EXPECT_EQ(PlanOf(planner, {{100, 100}, {3000, 100}, {9000, 10}}, 1 << 20, none).chunks,
            (std::vector<Range>{{100, 3000}, {9000, 10}}));
}

TEST(PlannerTest, IogapBridgesSmallGaps) {
  PlannerConfig c;
  c.iogap = 4096;
  Planner bridging(c);
  Planner exact({});
  NothingCovered none;
  std::vector<Range> want = {{0, 1000}, {5000, 1000}, {20000, 10}};
  FetchPlan bridged = PlanOf(bridging, want, 1 << 20, none);
  EXPECT_EQ(bridged.chunks, (std::vector<Range>{{0, 6000}, {20000, 10}}));
  EXPECT_EQ(bridged.bytes, 6010u);
  FetchPlan plain = PlanOf(exact, want, 1 << 20, none);
  EXPECT_EQ(plain.chunks.size(), 3u);
  EXPECT_EQ(plain.bytes, 2010u);
}

TEST(PlannerTest, PacksWithinXrootdLimits) {
  Planner planner({});
  NothingCovered none;
  std::vector<Range> want;
  for (uint64_t i = 0; i < 3000; ++i) {
    want.push_back({i * 100000, 5000});
  }
  FetchPlan plan = PlanOf(planner, want, 1ull << 40, none);
  ASSERT_EQ(plan.reads.size(), 3u);
  EXPECT_EQ(plan.reads[0].count, 1024u);
  EXPECT_EQ(plan.reads[1].count, 1024u);
  EXPECT_EQ(plan.reads[2].count, 952u);
  EXPECT_EQ(plan.reads[2].first, 2048u);
  // A long run is cut into chunks of at most 2097136 bytes.
  plan = PlanOf(planner, {{0, 5u << 20}}, 1ull << 40, none);
  ASSERT_EQ(plan.chunks.size(), 3u);
  EXPECT_EQ(plan.chunks[0].length, 2097136u);
  EXPECT_EQ(plan.chunks[2].length, (5u << 20) - 2 * 2097136u);
  EXPECT_EQ(plan.reads.size(), 1u);
}

TEST(PlannerTest, RequestByteCapSpreadsBigReads) {
  PlannerConfig c;
  c.max_request_bytes = 4 << 20;
  Planner planner(c);
  NothingCovered none;
  FetchPlan plan = PlanOf(planner, {{0, 10u << 20}}, 1ull << 40, none);
  EXPECT_EQ(plan.reads.size(), 3u);  // 2+2 MiB-ish chunks per read, 4 MiB cap
  for (const VectorRead& r : plan.reads) {
    EXPECT_LE(r.bytes, 4u << 20);
  }
  EXPECT_EQ(plan.bytes, 10u << 20);
}

TEST(PlannerTest, ClipsAtEndOfFile) {
  Planner planner({});
  MapCover cover(10000);
  FetchPlan plan = PlanOf(planner, {{9000, 5000}, {20000, 10}}, 10000, cover);
  EXPECT_EQ(plan.chunks, (std::vector<Range>{{9000, 1000}}));
  // The last page is short: holding its 1808 bytes (10000 - 2*4096) counts as whole.
  cover.Set(2, 0, 10000 - 2 * kPage);
  EXPECT_TRUE(PlanOf(planner, {{8192, 5000}}, 10000, cover).chunks.empty());
  PlannerConfig rc;
  rc.round_to_pages = true;
  Planner round(rc);
  MapCover empty(10000);
  EXPECT_EQ(PlanOf(round, {{9000, 1}}, 10000, empty).chunks,
            (std::vector<Range>{{8192, 10000 - 8192}}));
}

TEST(PlannerTest, SparseRootLikePatternCostsOneRequestPerVectorRead) {
  // The benchmark's pattern: 64 chunks of 2-16 KiB in one vector read. Cold: one request with
  // exactly the requested bytes; warm: none. Page rounding would cost ~45% more bytes.
  std::mt19937_64 rng(42);
  const uint64_t size = 200ull << 20;
  const uint64_t slot = size / 1365;
  std::vector<Range> want;
  uint64_t requested = 0;
  for (uint64_t i = 0; i < 64; ++i) {
    uint64_t len = 2048 + rng() % (16384 - 2048 + 1);
    want.push_back({i * slot + rng() % (slot - len), len});
    requested += len;
  }
  Planner planner({});
  MapCover cover(size);
  FetchCounters counters;
  FetchPlan cold = PlanOf(planner, want, size, cover);
  counters.Record(cold);
  EXPECT_EQ(cold.reads.size(), 1u);
  EXPECT_EQ(cold.chunks.size(), 64u);
  EXPECT_EQ(cold.bytes, requested);
  cover.AddPlan(cold);
  FetchPlan warm = PlanOf(planner, want, size, cover);
  counters.Record(warm);
  EXPECT_EQ(warm.reads.size(), 0u);
  FetchTotals t = counters.Snapshot();
  EXPECT_EQ(t.requests, 1u);
  EXPECT_EQ(t.chunks, 64u);
  EXPECT_EQ(t.bytes, requested);

  PlannerConfig rc;
  rc.round_to_pages = true;
  FetchPlan rounded = PlanOf(Planner(rc), want, size, MapCover(size));
  EXPECT_GT(rounded.bytes, requested + requested / 4);
}

TEST(ChannelPoolTest, PicksLeastLoadedUsableChannel) {
  ChannelPool pool(3, /*others_usable=*/false);
  EXPECT_EQ(pool.Acquire(), 0u);
  EXPECT_EQ(pool.Acquire(), 0u);  // only channel 0 usable
  pool.SetUsable(1, true);
  pool.SetUsable(2, true);
  EXPECT_EQ(pool.Acquire(), 1u);
  EXPECT_EQ(pool.Acquire(), 2u);
  pool.Release(0);
  pool.Release(0);
  EXPECT_EQ(pool.Acquire(), 0u);
  EXPECT_EQ(pool.in_flight(1), 1u);
  pool.SetUsable(2, false);
  pool.Release(1);
  EXPECT_EQ(pool.Acquire(), 1u);  // 0 has one in flight, 1 none
  EXPECT_EQ(pool.Acquire(), 0u);  // both have one: the lowest wins
  // A sequential reader (one request at a time) always gets channel 0.
  ChannelPool seq(4);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(seq.Acquire(), 0u);
    seq.Release(0);
  }
  // Read-ahead keeps off channel 0 while another is usable.
  ChannelPool ahead(3, /*others_usable=*/false);
  EXPECT_EQ(ahead.Acquire(1), 0u);  // none from 1 on: channel 0
  ahead.SetUsable(2, true);
  EXPECT_EQ(ahead.Acquire(1), 2u);
  EXPECT_EQ(ahead.Acquire(1), 2u);
  EXPECT_EQ(ahead.Acquire(), 0u);  // the application's request finds 0 free (one in flight: 1)
}

}  // namespace
}  // namespace ferry::fetch
