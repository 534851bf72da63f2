// Corrupt, truncated and foreign stores give clear errors; a two-column selection gives the
// same answer from the store as from the ROOT file.
#include <filesystem>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "base/endian.h"
#include "rootio/root_file.h"
#include "store/converter.h"
#include "store/selection.h"
#include "store/store.h"
#include "testing/testing.h"

namespace ferry::store {
namespace {

std::string ConvertDy(const testing::TempDir& dir) {
  ConvertOptions o;
  o.inputs = {testing::RootDataFile("nano_dy.root")};
  o.out_dir = dir.path();
  EXPECT_TRUE(Convert(o).has_value());
  return dir.path() + "/" + ShardFileName(1, 1);
}

EventId FirstEvent() {
  return {1, 13889, 3749778};
}

Status ReadAll(const std::string& dir, const EventId& id, IoMode mode = IoMode::kPread) {
  auto s = FERRY_TRY(Store::Open(dir, {.mode = mode}));
  std::vector<rootio::Column> out;
  return s->ReadEvents({&id, 1}, FERRY_TRY(s->ResolveColumns({})), &out);
}

TEST(StoreErrors, TruncatedShard) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir dir;
  std::string shard = ConvertDy(dir);
  auto bytes = testing::ReadWholeFile(shard);
  for (size_t keep : {size_t{100}, size_t{5000}, bytes.size() / 2, bytes.size() - 1}) {
    testing::WriteWholeFile(
        shard, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(keep)));
    for (IoMode mode : {IoMode::kPread, IoMode::kMmap}) {
      Status st = ReadAll(dir.path(), FirstEvent(), mode);
      ASSERT_FALSE(st.has_value()) << keep;
      EXPECT_EQ(st.error().code(), ErrorCode::kCorruption) << st.error().ToString();
      EXPECT_NE(st.error().ToString().find("run-1.g1.shard"), std::string::npos)
          << st.error().ToString();
    }
  }
}

TEST(StoreErrors, FlippedBytesAreCaught) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir dir;
  std::string shard = ConvertDy(dir);
  const auto clean = testing::ReadWholeFile(shard);
  auto s = std::move(*Store::Open(dir.path()));
  ASSERT_TRUE(s->Verify().has_value());
  ShardHeader h = *ShardHeader::Parse(std::span(clean).first(kShardHeaderSize), clean.size());
  // A byte inside the first record (slot 0 holds the lowest event number of the lumi).
  auto rec = clean;
  rec[h.sections[kIndex].offset + 10] ^= 0x10;
  testing::WriteWholeFile(shard, rec);
  auto s2 = std::move(*Store::Open(dir.path()));
  auto v = s2->Verify();
  ASSERT_FALSE(v.has_value());
  EXPECT_NE(v.error().ToString().find("checksum"), std::string::npos) << v.error().ToString();
  // A byte in the payload: Verify names the structure.
  auto pay = clean;
  pay[h.sections[kPayload].offset + h.sections[kPayload].size / 2] ^= 0x01;
  testing::WriteWholeFile(shard, pay);
  auto s3 = std::move(*Store::Open(dir.path()));
  auto v3 = s3->Verify();
  ASSERT_FALSE(v3.has_value());
  EXPECT_EQ(v3.error().code(), ErrorCode::kCorruption);
  // The header.
  auto head = clean;
  head[20] ^= 0x01;
  testing::WriteWholeFile(shard, head);
  Status hs = ReadAll(dir.path(), FirstEvent());
  ASSERT_FALSE(hs.has_value());
  EXPECT_NE(hs.error().ToString().find("shard header: checksum mismatch"), std::string::npos)
      << hs.error().ToString();
}

TEST(StoreErrors, WrongVersionMissingManifestForeignShard) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir dir;
  std::string shard = ConvertDy(dir);
  const std::string manifest = dir.path() + "/" + kManifestName;
  auto bytes = testing::ReadWholeFile(manifest);
  auto v9 = bytes;
  StoreLE<uint32_t>(v9.data() + 8, 9);
  StoreLE<uint32_t>(v9.data() + v9.size() - 4, crc32c::Value(v9.data(), v9.size() - 4));
  testing::WriteWholeFile(manifest, v9);
  auto st = Store::Open(dir.path());
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(st.error().ToString().find("version 9"), std::string::npos) << st.error().ToString();
  // A shard header of another version.
  testing::WriteWholeFile(manifest, bytes);
  auto sb = testing::ReadWholeFile(shard);
  StoreLE<uint32_t>(sb.data() + 8, 4);
  testing::WriteWholeFile(shard, sb);
  Status ss = ReadAll(dir.path(), FirstEvent());
  ASSERT_FALSE(ss.has_value());
  EXPECT_EQ(ss.error().code(), ErrorCode::kUnsupported) << ss.error().ToString();
  std::filesystem::remove(manifest);
  EXPECT_FALSE(Store::Open(dir.path()).has_value());
  EXPECT_FALSE(Store::Open(dir.path() + "/nope").has_value());
}

TEST(StoreErrors, OutOfRangeCoordinates) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir dir;
  ConvertDy(dir);
  for (EventId id : {EventId{2, 13889, 3749778}, EventId{1, 13890, 3749778}, EventId{1, 0, 3749778},
                     EventId{1, 13889, 0}, EventId{1, 13889, UINT64_MAX},
                     EventId{UINT64_MAX, UINT64_MAX, UINT64_MAX}}) {
    Status st = ReadAll(dir.path(), id);
    ASSERT_FALSE(st.has_value());
    EXPECT_EQ(st.error().code(), ErrorCode::kNotFound);
    EXPECT_NE(st.error().message().find(id.ToString()), std::string::npos) << st.error().message();
  }
}

// MET_pt > 25 && n(Muon) >= 1: count and mean of MET_pt and of Muon_pt, from the TTree and from
// the store (both pread and mmap): identical, bit for bit.
TEST(StoreSelection, TwoColumnSelectionMatchesTheTree) {
  FERRY_REQUIRE_ROOT_DATA();
  for (const char* name :
       {"nano_dy.root", "nanoAOD_2015_CMS_Open_Data_ttbar.root", "nano_tree.root"}) {
    const std::string path = testing::RootDataFile(name);
    testing::TempDir dir;
    ConvertOptions o;
    o.inputs = {path};
    o.out_dir = dir.path();
    o.block_size = 4096;
    o.log2_ks = 4;
    ASSERT_TRUE(Convert(o).has_value());
    auto file = std::move(*rootio::RootFile::OpenPath(path));
    auto tree = std::move(*file->OpenTree("Events"));
    auto met = *tree->ReadLeaf("MET_pt", tree->All());
    auto nmu = *tree->ReadLeaf("nMuon", tree->All());
    auto mupt = *tree->ReadLeaf("Muon_pt", tree->All());
    uint64_t want_n = 0;
    double want_met = 0;
    double want_mu = 0;
    for (int64_t i = 0; i < tree->entries(); ++i) {
      auto k = static_cast<size_t>(i);
      if (met.AsDouble(k) > 25 && static_cast<double>(nmu.AsUint64(k)) >= 1) {
        ++want_n;
        want_met += met.AsDouble(k);
        auto [b, e] = mupt.EntryValues(i);
        for (uint64_t v = b; v < e; ++v) {
          want_mu += mupt.AsDouble(v);
        }
      }
    }
    for (IoMode mode : {IoMode::kPread, IoMode::kMmap}) {
      auto s = std::move(*Store::Open(dir.path(), {.mode = mode}));
      Selection sel = *Selection::Parse("MET_pt > 25 && n(Muon) >= 1", s->schema());
      std::vector<int32_t> cols =
          *s->ResolveColumns(std::vector<std::string>{"MET_pt", "nMuon", "Muon_pt"});
      uint64_t n = 0;
      double sum_met = 0;
      double sum_mu = 0;
      ASSERT_TRUE(s->Scan(cols, [&](const ScanBatch& b) {
                     std::vector<const rootio::Column*> v = {&b.columns[0], &b.columns[1]};
                     std::vector<uint8_t> mask;
                     sel.EvaluateBatch(v, b.events, &mask);
                     for (int64_t i = 0; i < b.events; ++i) {
                       if ((mask[static_cast<size_t>(i)] != 0) != sel.Evaluate(v, i)) {
                         return Status(CorruptionError("batch and row evaluation differ"));
                       }
                       if (sel.Evaluate(v, i)) {
                         ++n;
                         sum_met += b.columns[0].AsDouble(static_cast<size_t>(i));
                         auto [lo, hi] = b.columns[2].EntryValues(i);
                         for (uint64_t x = lo; x < hi; ++x) {
                           sum_mu += b.columns[2].AsDouble(x);
                         }
                       }
                     }
                     return OkStatus();
                   }).has_value());
      EXPECT_EQ(n, want_n) << name;
      EXPECT_EQ(sum_met, want_met) << name;
      EXPECT_EQ(sum_mu, want_mu) << name;
      if (std::string(name) != "nano_tree.root") {
        EXPECT_GT(n, 0u) << name;  // the selection is not trivially empty
      }
      if (mode == IoMode::kMmap) {
        EXPECT_EQ(s->stats().reads, 0u);
      }
    }
  }
}

TEST(StoreSelection, ParseErrorsAndForms) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir dir;
  ConvertDy(dir);
  auto s = std::move(*Store::Open(dir.path()));
  EXPECT_TRUE(Selection::Parse("", s->schema()).has_value());
  EXPECT_TRUE(
      Selection::Parse("!(MET_pt < 10) || (nJet >= 2 && n(Jet_pt) != 3)", s->schema()).has_value());
  EXPECT_EQ(Selection::Parse("n(Muon) >= 1", s->schema())->columns().size(), 1u);
  for (const char* bad : {"MET_pt >", "Jet_pt > 3", "nope > 1", "MET_pt > 1 &&", "(MET_pt > 1",
                          "n(Nothing) > 0", "MET_pt ~ 3"}) {
    auto r = Selection::Parse(bad, s->schema());
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace ferry::store
