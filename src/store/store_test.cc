// Round trips every NanoAOD file of data/root through the store and compares every
// value with the TTree, by coordinate, by scan, and for a two-column selection.
#include "store/store.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <gtest/gtest.h>

#include "rootio/root_file.h"
#include "store/converter.h"
#include "testing/testing.h"

namespace ferry::store {
namespace {

const char* const kNanoFiles[] = {"nanoAOD_2015_CMS_Open_Data_ttbar.root", "nano_dy.root",
                                  "nano_tree.root", "missing_luminosityBlock.root"};

struct TreeData {
  std::unique_ptr<rootio::RootFile> file;
  std::unique_ptr<rootio::Tree> tree;
};

TreeData OpenTree(const std::string& path) {
  TreeData t;
  t.file = std::move(*rootio::RootFile::OpenPath(path));
  t.tree = std::move(*t.file->OpenTree("Events"));
  return t;
}

ConvertReport ConvertOrDie(const std::vector<std::string>& inputs,
                           const std::string& out,
                           uint32_t block = 32 * 1024,
                           const char* codec = "zstd:3",
                           uint8_t log2_ks = 13) {
  ConvertOptions o;
  o.inputs = inputs;
  o.out_dir = out;
  o.block_size = block;
  o.codec = *codec::Setting::Parse(codec);
  o.log2_ks = log2_ks;
  auto r = Convert(o);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return std::move(*r);
}

// Entry i of a column as bytes, for exact comparison (NaN-safe).
std::vector<uint8_t> EntryBytes(const rootio::Column& c, int64_t i) {
  auto [b, e] = c.EntryValues(i);
  size_t sz = c.value_size();
  return {c.bytes.begin() + static_cast<ptrdiff_t>(b * sz),
          c.bytes.begin() + static_cast<ptrdiff_t>(e * sz)};
}

std::vector<EventId> IdsOf(const rootio::Tree& tree) {
  auto run = *tree.ReadLeaf("run", tree.All());
  auto event = *tree.ReadLeaf("event", tree.All());
  bool has_lumi = tree.info().FindLeaf("luminosityBlock") >= 0;
  rootio::Column lumi;
  if (has_lumi) {
    lumi = *tree.ReadLeaf("luminosityBlock", tree.All());
  }
  std::vector<EventId> ids;
  for (int64_t i = 0; i < tree.entries(); ++i) {
    ids.push_back({run.AsUint64(static_cast<size_t>(i)),
                   has_lumi ? lumi.AsUint64(static_cast<size_t>(i)) : 0,
                   event.AsUint64(static_cast<size_t>(i))});
  }
  return ids;
}

class NanoRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(NanoRoundTrip, EveryEventEveryBranchByCoordinateAndScan) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::string path = testing::RootDataFile(GetParam());
  testing::TempDir dir;
  ConvertReport rep = ConvertOrDie({path}, dir.path());
  TreeData t = OpenTree(path);
  EXPECT_EQ(rep.manifest.events, static_cast<uint64_t>(t.tree->entries()));
  const bool no_lumi = std::string(GetParam()) == "missing_luminosityBlock.root";
  EXPECT_EQ((rep.manifest.flags & kManifestFlagNoLumi) != 0, no_lumi);

  for (IoMode mode : {IoMode::kPread, IoMode::kMmap}) {
    auto store = std::move(*Store::Open(dir.path(), {.mode = mode}));
    auto v = store->Verify();
    ASSERT_TRUE(v.has_value()) << v.error().ToString();
    EXPECT_EQ(v->records, rep.manifest.events);
    std::vector<int32_t> all = *store->ResolveColumns({});
    std::vector<EventId> ids = IdsOf(*t.tree);
    // Read in reverse order: the store's order must not matter.
    std::vector<EventId> rev(ids.rbegin(), ids.rend());
    std::vector<rootio::Column> got;
    auto st = store->ReadEvents(rev, all, &got);
    ASSERT_TRUE(st.has_value()) << st.error().ToString();
    for (size_t k = 0; k < all.size(); ++k) {
      const std::string& name = store->schema().columns[static_cast<size_t>(all[k])].name;
      rootio::Column want = *t.tree->ReadLeaf(name, t.tree->All());
      ASSERT_EQ(got[k].num_entries, t.tree->entries()) << name;
      for (int64_t i = 0; i < t.tree->entries(); ++i) {
        ASSERT_EQ(EntryBytes(got[k], t.tree->entries() - 1 - i), EntryBytes(want, i))
            << name << " entry " << i << " mode " << static_cast<int>(mode);
      }
    }
    if (mode == IoMode::kMmap) {
      EXPECT_EQ(store->stats().reads, 0u);  // zero application-level reads on the mmap path
    }
    // Scan of every column equals the tree in storage order (input order for one file).
    int64_t seen = 0;
    st = store->Scan(all, [&](const ScanBatch& b) {
      for (size_t k = 0; k < all.size(); ++k) {
        const std::string& name = store->schema().columns[static_cast<size_t>(all[k])].name;
        rootio::Column want = *t.tree->ReadLeaf(
            name, {b.columns[k].first_entry, b.columns[k].first_entry + b.events});
        for (int64_t i = 0; i < b.events; ++i) {
          if (EntryBytes(b.columns[k], i) != EntryBytes(want, i)) {
            return Status(
                CorruptionError("scan differs: " + name + " entry " + std::to_string(seen + i)));
          }
        }
      }
      seen += b.events;
      return OkStatus();
    });
    ASSERT_TRUE(st.has_value()) << st.error().ToString();
    EXPECT_EQ(seen, t.tree->entries());
  }
}

INSTANTIATE_TEST_SUITE_P(Nano, NanoRoundTrip, ::testing::ValuesIn(kNanoFiles));

TEST(Store, SmallBlocksEveryCodec) {
  FERRY_REQUIRE_ROOT_DATA();
  // Tiny blocks (one event per C block, 4 per S block) and every codec.
  const std::string path = testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root");
  TreeData t = OpenTree(path);
  std::vector<EventId> ids = IdsOf(*t.tree);
  for (const char* codec : {"zstd:1", "lz4", "zlib:1", "lzma:1", "none"}) {
    testing::TempDir dir;
    ConvertReport rep = ConvertOrDie({path}, dir.path(), 256, codec, 2);
    EXPECT_EQ(rep.manifest.log2_kc, 0);
    auto store = std::move(*Store::Open(dir.path()));
    auto v = store->Verify();
    ASSERT_TRUE(v.has_value()) << codec << ": " << v.error().ToString();
    EXPECT_EQ(v->records, 200u);
    EXPECT_EQ(v->c_blocks, 200u);
    std::vector<int32_t> cols =
        *store->ResolveColumns(std::vector<std::string>{"Jet_pt", "MET_pt", "nMuon", "Muon_pt"});
    std::vector<rootio::Column> got;
    ASSERT_TRUE(store->ReadEvents(ids, cols, &got).has_value());
    for (size_t k = 0; k < cols.size(); ++k) {
      rootio::Column want = *t.tree->ReadLeaf(
          store->schema().columns[static_cast<size_t>(cols[k])].name, t.tree->All());
      for (int64_t i = 0; i < t.tree->entries(); ++i) {
        ASSERT_EQ(EntryBytes(got[k], i), EntryBytes(want, i)) << codec;
      }
    }
  }
}

TEST(Store, RejectsDuplicatesAndMixedSchemas) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::string a = testing::RootDataFile("nano_dy.root");
  const std::string b = testing::RootDataFile("nano_tree.root");
  testing::TempDir dir;
  ConvertOptions o;
  o.out_dir = dir.path();
  o.inputs = {a, a};
  auto dup = Convert(o);
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.error().message().find("duplicate event 1:13889:"), std::string::npos)
      << dup.error().ToString();
  o.inputs = {a, b};
  auto mixed = Convert(o);
  ASSERT_FALSE(mixed.has_value());
  EXPECT_NE(mixed.error().message().find("columns"), std::string::npos);
  o.inputs = {testing::RootDataFile("uproot-HZZ.root")};
  o.tree = "events";
  auto no_run = Convert(o);
  ASSERT_FALSE(no_run.has_value());
  EXPECT_NE(no_run.error().message().find("no 'run' leaf"), std::string::npos)
      << no_run.error().ToString();
}

TEST(Store, TypedAccessAndMissingEvents) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::string path = testing::RootDataFile("nano_dy.root");
  testing::TempDir dir;
  ConvertOrDie({path}, dir.path());
  auto store = std::move(*Store::Open(dir.path()));
  TreeData t = OpenTree(path);
  EventId id = IdsOf(*t.tree)[3];
  std::vector<std::string> names = {"MET_pt", "Jet_pt", "nJet"};
  Event ev = *store->ReadEvent(id, names);
  rootio::Column met = *t.tree->ReadLeaf("MET_pt", {3, 4});
  EXPECT_EQ(*ev.Get<float>("MET_pt"), met.values<float>()[0]);
  auto jets = *ev.Values<float>("Jet_pt");
  EXPECT_EQ(jets.size(), static_cast<size_t>(*ev.Get<uint32_t>("nJet")));
  EXPECT_FALSE(ev.Get<double>("MET_pt").has_value());  // wrong type
  EXPECT_FALSE(ev.Get<float>("Jet_pt").has_value());   // not a scalar
  // Absent events: error names them; Contains says no.
  EventId missing{id.run, id.lumi, 1};
  EXPECT_FALSE(*store->Contains(missing));
  std::vector<rootio::Column> out;
  auto st = store->ReadEvents({&missing, 1}, *store->ResolveColumns({}), &out);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(st.error().message().find(missing.ToString()), std::string::npos);
  EventId no_run{999999, 1, 1};
  EXPECT_EQ(store->ReadEvents({&no_run, 1}, *store->ResolveColumns({}), &out).error().code(),
            ErrorCode::kNotFound);
  EXPECT_FALSE(ParseEventId("1:2").has_value());
  EXPECT_FALSE(ParseEventId("1:x:3").has_value());
  EXPECT_EQ(*ParseEventId("1:2:3"), (EventId{1, 2, 3}));
}

}  // namespace
}  // namespace ferry::store
