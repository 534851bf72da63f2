#include "store/format.h"

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "base/endian.h"
#include "store/shuffle.h"

namespace ferry::store {
namespace {

using rootio::LeafType;

Schema SmallSchema() {
  std::vector<ColumnSpec> cols(6);
  cols[0] = {.name = "run", .type = LeafType::kUInt32};
  cols[1] = {.name = "event", .type = LeafType::kUInt64};
  cols[2] = {.name = "nJet", .type = LeafType::kUInt32};
  cols[3] = {
      .name = "Jet_pt", .type = LeafType::kFloat32, .kind = ColumnKind::kJagged, .counter = 2};
  cols[4] = {.name = "HLT_x", .type = LeafType::kBool};
  cols[5] = {.name = "arr", .type = LeafType::kInt16, .len = 3};
  return *Schema::Build(std::move(cols));
}

TEST(Schema, OffsetsAlignedAndRoundTrip) {
  Schema s = SmallSchema();
  ASSERT_EQ(s.groups(), 1u);
  EXPECT_EQ(s.columns[1].record_offset % 8, 0u);
  EXPECT_EQ(s.columns[0].record_offset % 4, 0u);
  EXPECT_GE(s.columns[1].record_offset, kRecordHeaderBytes + 4);
  EXPECT_EQ(s.record_size % 8, 0u);
  EXPECT_EQ(s.fixed.size(), 5u);
  EXPECT_EQ(s.jagged.size(), 1u);
  ByteWriter w;
  s.Serialize(w);
  ByteReader r(w.bytes());
  Schema p = *Schema::Parse(r, s.record_size);
  ASSERT_EQ(p.columns.size(), s.columns.size());
  for (size_t i = 0; i < p.columns.size(); ++i) {
    EXPECT_EQ(p.columns[i].name, s.columns[i].name);
    EXPECT_EQ(p.columns[i].record_offset, s.columns[i].record_offset);
    EXPECT_EQ(p.columns[i].group, s.columns[i].group);
  }
}

TEST(Schema, RejectsBadCounter) {
  std::vector<ColumnSpec> cols(2);
  cols[0] = {.name = "x", .type = LeafType::kFloat32};
  cols[1] = {.name = "y", .type = LeafType::kFloat32, .kind = ColumnKind::kJagged, .counter = 0};
  EXPECT_FALSE(Schema::Build(cols).has_value());  // a float counter
}

Manifest SmallManifest() {
  Manifest m;
  m.run_extent = 2;
  m.lumi_extent = 3;
  m.event_extent = 4;
  m.events = 10;
  // Version 3: per-run extents (run 1: 2 x 2, run 7: 3 x 4), generations.
  m.padding = 2 * 2 + 3 * 4 - 10;
  m.tree = "Events";
  m.schema = SmallSchema();
  m.runs = {{1, 4, 2, 100, 2, 2, 1}, {7, 6, 3, 200, 3, 4, 2}};
  m.inputs = {{"a.root", 10}};
  m.codec = *codec::Setting::Parse("zstd:3");
  return m;
}

TEST(Manifest, RoundTripAndRunSlots) {
  Manifest m = SmallManifest();
  std::vector<uint8_t> bytes = m.Serialize();
  Manifest p = *Manifest::Parse(bytes);
  EXPECT_EQ(p.events, 10u);
  EXPECT_EQ(p.tree, "Events");
  EXPECT_EQ(p.schema_hash, m.schema_hash);
  EXPECT_EQ(p.RunSlot(7), 1);
  EXPECT_EQ(p.RunSlot(1), 0);
  EXPECT_EQ(p.RunSlot(5), -1);
  EXPECT_EQ(p.codec.algorithm, codec::Algorithm::kZstd);
  EXPECT_EQ(p.runs[1].event_extent, 4u);
  EXPECT_EQ(p.runs[1].file_name(), "run-7.g2.shard");
  // A run whose extents exceed the manifest's maxima, or generation 0, is rejected.
  for (auto bad : {RunEntry{7, 6, 3, 200, 3, 5, 2}, RunEntry{7, 6, 3, 200, 3, 4, 0}}) {
    Manifest b = SmallManifest();
    b.runs[1] = bad;
    b.padding = 2 * 2 + bad.lumi_extent * bad.event_extent - 10;
    EXPECT_FALSE(Manifest::Parse(b.Serialize()).has_value());
  }
}

TEST(Manifest, RejectsCorruptionTruncationAndVersion) {
  Manifest m = SmallManifest();
  std::vector<uint8_t> bytes = m.Serialize();
  for (size_t n : {0u, 7u, 12u, 40u}) {
    EXPECT_FALSE(Manifest::Parse(std::span(bytes).first(n)).has_value()) << n;
  }
  EXPECT_FALSE(Manifest::Parse(std::span(bytes).first(bytes.size() - 1)).has_value());
  std::vector<uint8_t> flipped = bytes;
  flipped[50] ^= 1;
  EXPECT_EQ(Manifest::Parse(flipped).error().code(), ErrorCode::kCorruption);
  std::vector<uint8_t> v2 = bytes;
  StoreLE<uint32_t>(v2.data() + 8, 4);
  StoreLE<uint32_t>(v2.data() + v2.size() - 4, crc32c::Value(v2.data(), v2.size() - 4));
  Error e = Manifest::Parse(v2).error();
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(e.message().find("version 4"), std::string::npos);
}

TEST(ShardHeader, RoundTripAndBounds) {
  ShardHeader h;
  h.run = 5;
  h.lumi_extent = 3;
  h.event_extent = 4;
  h.record_size = 64;
  h.log2_ks = 13;
  h.log2_kc = 4;
  h.events = 6;
  h.lumis = 2;
  uint64_t at = kShardHeaderSize;
  uint64_t sizes[kNumSections] = {2 * kLumiEntryBytes, 6 * 8, 3 * 4 * 64, 100, 0,
                                  kCTableEntryBytes};
  for (int i = 0; i < kNumSections; ++i) {
    h.sections[i] = {at, sizes[i]};
    at += sizes[i];
  }
  std::vector<uint8_t> bytes = h.Serialize();
  ASSERT_EQ(bytes.size(), kShardHeaderSize);
  ShardHeader p = *ShardHeader::Parse(bytes, at);
  EXPECT_EQ(p.run, 5u);
  EXPECT_EQ(p.c_blocks(), 1u);
  // The file is shorter than its sections: truncated.
  EXPECT_EQ(ShardHeader::Parse(bytes, at - 1).error().code(), ErrorCode::kCorruption);
  bytes[20] ^= 4;
  EXPECT_EQ(ShardHeader::Parse(bytes, at).error().code(), ErrorCode::kCorruption);
}

TEST(Record, SealAndCheck) {
  std::vector<uint8_t> rec(64, 0);
  EXPECT_FALSE(*CheckRecord(rec));  // padding slot
  WriteRecordHeader(rec, {.flags = kRecordPresent, .event = 42, .ordinal = 3});
  SealRecord(rec);
  EXPECT_TRUE(*CheckRecord(rec));
  EXPECT_EQ(ReadRecordHeader(rec).event, 42u);
  rec[50] ^= 1;
  EXPECT_FALSE(CheckRecord(rec).has_value());
}

TEST(LumiTable, Validates) {
  std::vector<uint8_t> t;
  AppendLumiEntry(t, {10, 0, 3});
  AppendLumiEntry(t, {12, 3, 2});
  auto ok = ParseLumiTable(t, 5, 3);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ((*ok)[1].lumi, 12u);
  EXPECT_FALSE(ParseLumiTable(t, 6, 3).has_value());  // does not cover every event
  EXPECT_FALSE(ParseLumiTable(t, 5, 2).has_value());  // more events than the extent
  std::vector<uint8_t> unsorted;
  AppendLumiEntry(unsorted, {12, 0, 3});
  AppendLumiEntry(unsorted, {10, 3, 2});
  EXPECT_FALSE(ParseLumiTable(unsorted, 5, 3).has_value());
}

}  // namespace
}  // namespace ferry::store

namespace ferry::store {
namespace {

// The SSE2 transposes (widths 2, 4 and 8, 16 values at a time, both ways) and the bytewise tail
// agree with the definition, for every width and for counts around the vector length.
TEST(Shuffle, RoundTripAndGatherEveryWidth) {
  for (size_t w : {1u, 2u, 3u, 4u, 8u}) {
    for (size_t n : {0u, 1u, 15u, 16u, 17u, 33u, 100u, 1000u}) {
      std::vector<uint8_t> src(n * w);
      for (size_t i = 0; i < src.size(); ++i) {
        src[i] = static_cast<uint8_t>(i * 7 + w);
      }
      std::vector<uint8_t> sh(src.size());
      std::vector<uint8_t> back(src.size());
      ShuffleBytes(src.data(), n, w, sh.data());
      for (size_t i = 0; i < n; ++i) {
        for (size_t b = 0; b < w; ++b) {
          ASSERT_EQ(sh[b * n + i], src[i * w + b]);
        }
      }
      UnshuffleBytes(sh.data(), n, w, back.data());
      EXPECT_EQ(back, src) << w << " " << n;
      for (size_t first = 0; first < n; first += 5) {
        const size_t count = std::min<size_t>(n - first, 19);
        std::vector<uint8_t> g(count * w);
        GatherShuffled(sh.data(), n, w, first, count, g.data());
        EXPECT_TRUE(
            std::equal(g.begin(), g.end(), src.begin() + static_cast<ptrdiff_t>(first * w)));
      }
    }
  }
}

}  // namespace
}  // namespace ferry::store
