// A store written straight through ShardWriter (no ROOT input): several runs, sparse lumis,
// uneven lumis (grid padding), out-of-order storage, fixed arrays and bools. Also writes the
// fuzz seeds of fuzz/corpus/store when FERRY_WRITE_STORE_FUZZ_SEEDS names a directory.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "base/endian.h"
#include "store/shard_builder.h"
#include "store/store.h"
#include "store/testing/shard_writer.h"
#include "testing/testing.h"

namespace ferry::store {
namespace {

using rootio::LeafType;

struct Ev {
  uint64_t run, lumi, event;
  int32_t n;
};

template <class T>
void Put(rootio::Column& c, T v) {
  size_t at = c.bytes.size();
  c.bytes.resize(at + sizeof(T));
  std::memcpy(c.bytes.data() + at, &v, sizeof(T));
}

Schema SyntheticSchema() {
  std::vector<ColumnSpec> cols(7);
  cols[0] = {.name = "run", .type = LeafType::kUInt32};
  cols[1] = {.name = "luminosityBlock", .type = LeafType::kUInt32};
  cols[2] = {.name = "event", .type = LeafType::kUInt64};
  cols[3] = {.name = "nX", .type = LeafType::kInt32};
  cols[4] = {.name = "X_v", .type = LeafType::kFloat32, .kind = ColumnKind::kJagged, .counter = 3};
  cols[5] = {.name = "flag", .type = LeafType::kBool, .len = 3};
  cols[6] = {.name = "w", .type = LeafType::kFloat64};
  return *Schema::Build(std::move(cols));
}

// Columns holding the given events (in that order), values derived from the event number.
std::vector<rootio::Column> ColumnsOf(const Schema& s, const std::vector<Ev>& evs) {
  std::vector<rootio::Column> c(s.columns.size());
  for (size_t i = 0; i < c.size(); ++i) {
    c[i] = Store::StartColumnFor(s.columns[i]);
  }
  for (const Ev& e : evs) {
    Put<uint32_t>(c[0], static_cast<uint32_t>(e.run));
    Put<uint32_t>(c[1], static_cast<uint32_t>(e.lumi));
    Put<uint64_t>(c[2], e.event);
    Put<int32_t>(c[3], e.n);
    for (int32_t k = 0; k < e.n; ++k) {
      Put<float>(c[4], static_cast<float>(e.event) * 0.5f + static_cast<float>(k));
    }
    c[4].offsets.push_back(c[4].bytes.size() / 4);
    for (int k = 0; k < 3; ++k) {
      Put<uint8_t>(c[5], static_cast<uint8_t>((e.event >> k) & 1));
    }
    Put<double>(c[6], static_cast<double>(e.event) / 3.0);
    for (auto& col : c) {
      ++col.num_entries;
    }
  }
  return c;
}

std::vector<Ev> Events() {
  std::vector<Ev> evs;
  // run 5: lumis 1 (3 events), 2 (1 event), 1000 (5 events, sparse lumi range); run 9: lumi 4.
  for (uint64_t e : {30u, 10u, 20u})
    evs.push_back({5, 1, e, static_cast<int32_t>(e % 4)});
  evs.push_back({5, 2, 7, 0});
  for (uint64_t e : {5u, 4u, 3u, 2u, 1u})
    evs.push_back({5, 1000, e, static_cast<int32_t>(e)});
  for (uint64_t e : {100u, 200u})
    evs.push_back({9, 4, e, 2});
  return evs;
}

// Writes the store; returns its manifest.
Manifest WriteSynthetic(const std::string& dir,
                        uint8_t log2_kc,
                        uint8_t log2_ks,
                        uint32_t version = kFormatVersion) {
  Manifest m;
  m.version = version;
  m.schema = SyntheticSchema();
  m.tree = "Events";
  m.codec = *codec::Setting::Parse("zstd:3");
  m.log2_kc = log2_kc;
  m.log2_ks = log2_ks;
  std::vector<Ev> evs = Events();
  std::map<uint64_t, std::map<uint64_t, std::vector<uint64_t>>> grid;
  for (const Ev& e : evs) {
    grid[e.run][e.lumi].push_back(e.event);
  }
  m.run_extent = grid.size();
  for (auto& [run, lumis] : grid) {
    m.lumi_extent = std::max<uint64_t>(m.lumi_extent, lumis.size());
    for (auto& [l, nums] : lumis) {
      std::sort(nums.begin(), nums.end());
      m.event_extent = std::max<uint64_t>(m.event_extent, nums.size());
    }
  }
  m.events = evs.size();
  m.padding = m.run_extent * m.lumi_extent * m.event_extent - m.events;
  if (version >= 3) {
    // Version 3: each run's own extents (run 5: 3 x 5, run 9: 1 x 2).
    m.padding = 0;
    for (auto& [run, lumis] : grid) {
      uint64_t e = 0;
      for (auto& [l, nums] : lumis) {
        e = std::max<uint64_t>(e, nums.size());
      }
      m.padding += lumis.size() * e;
    }
    m.padding -= m.events;
  }
  (void)m.Serialize();
  size_t slot = 0;
  TaskPool pool(2);
  for (auto& [run, lumis] : grid) {
    ShardPlan plan{.run = run, .run_slot = slot++};
    for (auto& [l, nums] : lumis) {
      plan.lumis.push_back({l, plan.event_numbers.size(), static_cast<uint32_t>(nums.size())});
      plan.event_numbers.insert(plan.event_numbers.end(), nums.begin(), nums.end());
    }
    if (version >= 3) {
      RunEntry re{run, 0, plan.lumis.size(), 0, plan.lumis.size(), 0, 1};
      for (auto& l : plan.lumis) {
        re.events += l.count;
        re.event_extent = std::max<uint64_t>(re.event_extent, l.count);
      }
      m.runs.push_back(re);
    }
  }
  if (version >= 3) {
    (void)m.Serialize();
    slot = 0;
    for (auto& [run, lumis] : grid) {
      ShardPlan plan{.run = run, .run_slot = slot++};
      for (auto& [l, nums] : lumis) {
        plan.lumis.push_back({l, plan.event_numbers.size(), static_cast<uint32_t>(nums.size())});
        plan.event_numbers.insert(plan.event_numbers.end(), nums.begin(), nums.end());
      }
      std::vector<Ev> mine;
      for (const Ev& e : evs) {
        if (e.run == run)
          mine.push_back(e);
      }
      auto cols = ColumnsOf(m.schema, mine);
      auto w = std::move(*ShardBuilder::Create(dir + "/" + ShardFileName(run, 1), m, plan, &pool));
      for (size_t i = 0; i < mine.size(); ++i) {
        size_t l = 0;
        while (plan.lumis[l].lumi != mine[i].lumi)
          ++l;
        auto nums = std::span(plan.event_numbers).subspan(plan.lumis[l].first, plan.lumis[l].count);
        auto e = static_cast<uint32_t>(std::find(nums.begin(), nums.end(), mine[i].event)
                                       - nums.begin());
        EventSlot es{static_cast<uint32_t>(l), e};
        EXPECT_TRUE(w->Add(cols, static_cast<int64_t>(i), 1, {&es, 1}).has_value());
      }
      auto st = w->Finish();
      EXPECT_TRUE(st.has_value()) << st.error().ToString();
      m.runs[slot - 1].shard_bytes = st->bytes;
    }
    testing::WriteWholeFile(dir + "/" + kManifestName, m.Serialize());
    return m;
  }
  slot = 0;
  for (auto& [run, lumis] : grid) {
    ShardPlan plan{.run = run, .run_slot = slot++};
    for (auto& [l, nums] : lumis) {
      plan.lumis.push_back({l, plan.event_numbers.size(), static_cast<uint32_t>(nums.size())});
      plan.event_numbers.insert(plan.event_numbers.end(), nums.begin(), nums.end());
    }
    std::vector<Ev> mine;
    for (const Ev& e : evs) {
      if (e.run == run)
        mine.push_back(e);
    }
    auto cols = ColumnsOf(m.schema, mine);
    m.runs.push_back({run, mine.size(), plan.lumis.size(), 0});
    auto w = std::move(*ShardWriter::Create(dir + "/" + ShardFileName(run), m, plan));
    for (size_t i = 0; i < mine.size(); ++i) {
      size_t l = 0;
      while (plan.lumis[l].lumi != mine[i].lumi)
        ++l;
      auto nums = std::span(plan.event_numbers).subspan(plan.lumis[l].first, plan.lumis[l].count);
      uint64_t e =
          static_cast<uint64_t>(std::find(nums.begin(), nums.end(), mine[i].event) - nums.begin());
      EXPECT_TRUE(w->Add(cols, static_cast<int64_t>(i), l, e).has_value());
    }
    m.runs.back().shard_bytes = w->Finish()->bytes;
  }
  testing::WriteWholeFile(dir + "/" + kManifestName, m.Serialize());
  return m;
}

TEST(SyntheticStore, RunsLumisPaddingAndValues) {
  // Version 1 (collections in C blocks only), 2 (also in J chunks) and 3 (E blocks): the same
  // values.
  for (auto [kc, ks, version] :
       {std::tuple{0, 0, 2u}, std::tuple{1, 2, 2u}, std::tuple{3, 13, 2u}, std::tuple{1, 2, 1u},
        std::tuple{0, 0, 1u}, std::tuple{0, 0, 3u}, std::tuple{1, 2, 3u}, std::tuple{3, 13, 3u}}) {
    testing::TempDir dir;
    Manifest m =
        WriteSynthetic(dir.path(), static_cast<uint8_t>(kc), static_cast<uint8_t>(ks), version);
    EXPECT_EQ(m.run_extent, 2u);
    EXPECT_EQ(m.lumi_extent, 3u);
    EXPECT_EQ(m.event_extent, 5u);
    EXPECT_EQ(m.padding, version >= 3 ? 3u * 5 + 1 * 2 - 11 : 2u * 3 * 5 - 11);
    for (IoMode mode : {IoMode::kPread, IoMode::kMmap}) {
      auto s = std::move(*Store::Open(dir.path(), {.mode = mode}));
      auto v = s->Verify();
      ASSERT_TRUE(v.has_value()) << v.error().ToString();
      EXPECT_EQ(v->records, 11u);
      EXPECT_EQ(v->padding, m.padding);
      std::vector<EventId> ids;
      for (const Ev& e : Events())
        ids.push_back({e.run, e.lumi, e.event});
      std::reverse(ids.begin(), ids.end());
      std::vector<rootio::Column> got;
      ASSERT_TRUE(s->ReadEvents(ids, *s->ResolveColumns({}), &got).has_value());
      for (size_t i = 0; i < ids.size(); ++i) {
        const EventId& id = ids[i];
        auto ii = static_cast<int64_t>(i);
        EXPECT_EQ(got[2].values<uint64_t>()[i], id.event);
        EXPECT_EQ(got[1].values<uint32_t>()[i], id.lumi);
        auto [b, e] = got[4].EntryValues(ii);
        ASSERT_EQ(static_cast<int32_t>(e - b), got[3].values<int32_t>()[i]);
        for (uint64_t k = b; k < e; ++k) {
          EXPECT_EQ(got[4].values<float>()[k],
                    static_cast<float>(id.event) * 0.5f + static_cast<float>(k - b));
        }
        for (uint64_t k = 0; k < 3; ++k) {
          EXPECT_EQ(got[5].bytes[i * 3 + k], (id.event >> k) & 1);
        }
        EXPECT_EQ(got[6].values<double>()[i], static_cast<double>(id.event) / 3.0);
      }
      // Scan: runs in order, storage order inside.
      std::vector<uint64_t> seen;
      std::vector<float> seen_x;
      ASSERT_TRUE(s->Scan(*s->ResolveColumns(std::vector<std::string>{"event", "X_v"}),
                          [&](const ScanBatch& b) {
                            for (int64_t i = 0; i < b.events; ++i)
                              seen.push_back(
                                  b.columns[0].values<uint64_t>()[static_cast<size_t>(i)]);
                            auto xs = b.columns[1].values<float>();
                            seen_x.insert(seen_x.end(), xs.begin(), xs.end());
                            return OkStatus();
                          })
                      .has_value());
      std::vector<uint64_t> want;
      std::vector<float> want_x;
      for (const Ev& e : Events()) {
        want.push_back(e.event);
        for (int32_t k = 0; k < e.n; ++k)
          want_x.push_back(static_cast<float>(e.event) * 0.5f + static_cast<float>(k));
      }
      EXPECT_EQ(seen, want);
      EXPECT_EQ(seen_x, want_x) << "format version " << version;
      EXPECT_FALSE(*s->Contains({5, 3, 1}));
      EXPECT_FALSE(*s->Contains({5, 1000, 6}));
      EXPECT_TRUE(*s->Contains({9, 4, 200}));
    }
    // Fuzz seeds: manifest length, manifest, shard.
    const char* seeds = std::getenv("FERRY_WRITE_STORE_FUZZ_SEEDS");
    if (seeds != nullptr && kc == 1 && version == kFormatVersion) {
      auto man = testing::ReadWholeFile(dir.path() + "/" + kManifestName);
      for (uint64_t run : {5u, 9u}) {
        auto shard = testing::ReadWholeFile(dir.path() + "/" + ShardFileName(run, 1));
        std::vector<uint8_t> seed(4);
        StoreLE<uint32_t>(seed.data(), static_cast<uint32_t>(man.size()));
        seed.insert(seed.end(), man.begin(), man.end());
        seed.insert(seed.end(), shard.begin(), shard.end());
        testing::WriteWholeFile(std::string(seeds) + "/synthetic-v3-run" + std::to_string(run),
                                seed);
      }
    }
  }
}

// A scattered pick list's E blocks are decoded into scratch, not cached; a block missed a second
// time is kept and the third pick of it hits. Values are the same every time.
TEST(SyntheticStore, PickedBlocksAreCachedOnlyOnceMissedTwice) {
  testing::TempDir dir;
  WriteSynthetic(dir.path(), 1, 2, 3);
  for (IoMode mode : {IoMode::kPread, IoMode::kMmap}) {
    auto s = std::move(*Store::Open(dir.path(), {.mode = mode}));
    std::vector<EventId> ids;
    for (const Ev& e : Events())
      ids.push_back({e.run, e.lumi, e.event});
    const auto cols = *s->ResolveColumns({});
    std::vector<std::vector<rootio::Column>> got(3);
    std::vector<StoreStats> stats;
    for (auto& out : got) {
      s->ResetStats();
      ASSERT_TRUE(s->ReadEvents(ids, cols, &out).has_value());
      stats.push_back(s->stats());
    }
    EXPECT_EQ(stats[0].cache_hits, 0u);
    EXPECT_EQ(stats[1].cache_hits, 0u);
    EXPECT_GT(stats[1].block_reads, 0u) << "the second pass decodes its blocks again";
    EXPECT_EQ(stats[1].block_reads, stats[0].block_reads);
    EXPECT_EQ(stats[2].block_reads, 0u) << "the third pass finds every block cached";
    EXPECT_EQ(stats[2].cache_hits, stats[0].block_reads);
    for (size_t k = 0; k < cols.size(); ++k) {
      EXPECT_EQ(got[1][k].bytes, got[0][k].bytes) << "column " << k;
      EXPECT_EQ(got[2][k].bytes, got[0][k].bytes) << "column " << k;
      EXPECT_EQ(got[2][k].offsets, got[0][k].offsets) << "column " << k;
    }
  }
}

}  // namespace
}  // namespace ferry::store
