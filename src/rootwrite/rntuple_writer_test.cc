// RntupleWriter against the colleague's reader (rootio/rntuple.h) and the real files ROOT
// wrote (data/rntuple): every type under every codec read back to the values the sample's
// functions give, the importer's layout of ROOT's own NanoAOD-like file reproduced field by
// field, the anchor key and StreamerInfo ROOT writes, page checksums, empty RNTuples and bad
// input. Encodings are also checked byte by byte, independently of the reader.
#include "rootwrite/rntuple_writer.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include <gtest/gtest.h>

#include "rootio/key.h"
#include "rootio/rntuple.h"
#include "rootio/root_file.h"
#include "rootwrite/column_batch.h"
#include "rootwrite/rntuple_page_writer.h"
#include "rootwrite/sample_rntuple.h"
#include "rootwrite/sample_tree.h"
#include "testing/testing.h"

namespace ferry::rootwrite {
namespace {

#define FERRY_REQUIRE_RNTUPLE_DATA()                  \
  do {                                                \
    if (::ferry::testing::RntupleDataDir().empty()) { \
      GTEST_SKIP() << "data/rntuple not present";     \
    }                                                 \
  } while (0)

using rootio::LeafType;
using rootio::RntupleValue;

constexpr const char* kMuons = "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root";

struct Opened {
  std::unique_ptr<rootio::RootFile> file;
  std::unique_ptr<rootio::Rntuple> ntuple;
};

Opened Open(const std::string& path, const std::string& name = "Events") {
  Opened o;
  auto f = rootio::RootFile::OpenPath(path);
  EXPECT_TRUE(f.has_value()) << f.error().ToString();
  if (!f.has_value()) {
    return o;
  }
  o.file = std::move(*f);
  auto r = rootio::Rntuple::Open(*o.file, name);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  if (r.has_value()) {
    o.ntuple = std::move(*r);
  }
  return o;
}

template <class T>
void AppendValue(rootio::Column& c, T v) {
  const size_t at = c.bytes.size();
  c.bytes.resize(at + sizeof(T));
  std::memcpy(c.bytes.data() + at, &v, sizeof(T));
}

void ExpectSampleValues(const rootio::Rntuple& r, int64_t entries) {
  const std::vector<BranchSpec> specs = sample::RntupleBranches();
  const std::vector<rootio::Column> cols = sample::RntupleBatch(0, entries);
  ASSERT_EQ(r.entries(), static_cast<uint64_t>(entries));
  for (size_t i = 0; i < specs.size(); ++i) {
    auto id = r.FindField(specs[i].name);
    ASSERT_TRUE(id.has_value()) << specs[i].name;
    auto got = r.Read(*id, 0, r.entries());
    ASSERT_TRUE(got.has_value()) << specs[i].name << ": " << got.error().ToString();
    bool counter = false;  // a counter of a collection reads as its cardinality
    for (const BranchSpec& s : specs) {
      counter = counter || s.count == specs[i].name;
    }
    EXPECT_EQ(RntupleValue::List(*got).ToJson(),
              RntupleValue::List(sample::RntupleValuesOf(cols[i], counter)).ToJson())
        << specs[i].name;
  }
}

class EveryCodec : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryCodec, EveryTypeReadsBackOverManyPagesAndClusters) {
  testing::TempDir dir;
  const codec::Setting setting = *codec::Setting::Parse(GetParam());
  RntupleOptions o;
  o.page_bytes = 256;
  o.zipped_cluster_bytes = 8 << 10;
  o.check_entries = 50;
  const std::string path = dir.File("sample.root");
  ASSERT_TRUE(sample::WriteRntuple(path, sample::Fixed(setting), o, 3000).has_value());
  Opened in = Open(path);
  ASSERT_NE(in.ntuple, nullptr);
  ExpectSampleValues(*in.ntuple, 3000);
  EXPECT_GT(in.ntuple->clusters().size(), 2u);
  EXPECT_EQ(in.ntuple->cluster_groups(), 1u);
  for (const rootio::ClusterInfo& c : in.ntuple->clusters()) {
    for (size_t k = 0; k < c.columns.size(); ++k) {
      const rootio::ColumnPages& pages = c.columns[k];
      EXPECT_EQ(pages.compression, static_cast<uint32_t>(setting.RootSetting()));
      const uint16_t bits = in.ntuple->columns()[k].bits;
      for (const rootio::PageInfo& p : pages.pages) {
        EXPECT_TRUE(p.has_checksum);
        EXPECT_LE(rootio::PageLength(p.elements, bits), 256u);
      }
    }
  }
}

// Offsets are relative to their cluster: ranges that start inside one cluster and end in
// another read as the same slice of the whole.
TEST(RntupleWriter, AnyEntryRangeReadsAcrossClusters) {
  testing::TempDir dir;
  RntupleOptions o;
  o.page_bytes = 512;
  o.zipped_cluster_bytes = 4 << 10;
  o.check_entries = 37;
  const std::string path = dir.File("ranges.root");
  ASSERT_TRUE(sample::WriteRntuple(path, sample::Fixed({codec::Algorithm::kLz4, 4}), o, 2000));
  Opened in = Open(path);
  ASSERT_NE(in.ntuple, nullptr);
  ASSERT_GT(in.ntuple->clusters().size(), 4u);
  const std::vector<rootio::Column> cols = sample::RntupleBatch(0, 2000);
  const std::vector<BranchSpec> specs = sample::RntupleBranches();
  for (const char* name : {"Obj_big", "Jet_e", "nObj", "u64", "flag"}) {
    size_t i = 0;
    while (specs[i].name != name) {
      ++i;
    }
    const std::vector<RntupleValue> all =
        sample::RntupleValuesOf(cols[i], std::string_view(name) == "nObj");
    for (auto [first, count] :
         {std::pair<uint64_t, uint64_t>{1, 1}, {333, 700}, {1999, 1}, {1000, 1000}, {57, 0}}) {
      auto got = in.ntuple->Read(*in.ntuple->FindField(name), first, count);
      ASSERT_TRUE(got.has_value()) << name << " " << first << ": " << got.error().ToString();
      std::vector<RntupleValue> want(all.begin() + static_cast<ptrdiff_t>(first),
                                     all.begin() + static_cast<ptrdiff_t>(first + count));
      EXPECT_EQ(RntupleValue::List(*got).ToJson(), RntupleValue::List(want).ToJson())
          << name << " [" << first << ", +" << count << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RntupleWriter,
                         EveryCodec,
                         ::testing::Values("none", "zlib:6", "lzma:4", "zstd:5", "lz4"));

TEST(RntupleWriter, UncompressedRntuplesUsePlainEncodingsAsRoot) {
  testing::TempDir dir;
  const std::string none = dir.File("none.root");
  const std::string zstd = dir.File("zstd.root");
  ASSERT_TRUE(sample::WriteRntuple(none, sample::Fixed({codec::Algorithm::kNone, 0}), {}, 10));
  ASSERT_TRUE(sample::WriteRntuple(zstd, sample::Fixed({codec::Algorithm::kZstd, 5}), {}, 10));
  Opened a = Open(none);
  Opened b = Open(zstd);
  ASSERT_NE(a.ntuple, nullptr);
  ASSERT_NE(b.ntuple, nullptr);
  auto type_of = [](const Opened& o, const std::string& field) {
    uint32_t id = *o.ntuple->FindField(field);
    return rootio::FindColumnType(o.ntuple->columns()[o.ntuple->Representation(id, 0)[0]].type)
        ->name;
  };
  EXPECT_EQ(type_of(a, "i32"), "Int32");
  EXPECT_EQ(type_of(b, "i32"), "SplitInt32");
  EXPECT_EQ(type_of(a, "d"), "Real64");
  EXPECT_EQ(type_of(b, "d"), "SplitReal64");
  EXPECT_EQ(type_of(a, "flag"), "Bit");
  EXPECT_EQ(type_of(b, "Obj_pt"), "SplitIndex64");  // a projected RVec: the collection's offsets
  EXPECT_EQ(type_of(a, "Obj_pt"), "Index64");
  EXPECT_EQ(b.ntuple->clusters().size(), 1u);  // ROOT's default cluster size
}

// Fields, columns and aliases compared record by record; ids index both schemas alike.
void ExpectSameSchema(const rootio::Rntuple& ours, const rootio::Rntuple& root) {
  ASSERT_EQ(ours.fields().size(), root.fields().size());
  for (size_t i = 0; i < ours.fields().size(); ++i) {
    const rootio::FieldRecord& a = ours.fields()[i];
    const rootio::FieldRecord& b = root.fields()[i];
    EXPECT_EQ(std::tie(a.name, a.type_name, a.parent_id, a.role, a.flags, a.source_field_id,
                       a.field_version, a.type_version),
              std::tie(b.name, b.type_name, b.parent_id, b.role, b.flags, b.source_field_id,
                       b.field_version, b.type_version))
        << "field " << i << " " << b.name;
  }
  ASSERT_EQ(ours.columns().size(), root.columns().size());
  for (size_t i = 0; i < ours.columns().size(); ++i) {
    const rootio::ColumnRecord& a = ours.columns()[i];
    const rootio::ColumnRecord& b = root.columns()[i];
    EXPECT_EQ(std::tie(a.type, a.bits, a.field_id, a.flags, a.representation),
              std::tie(b.type, b.bits, b.field_id, b.flags, b.representation))
        << "column " << i;
  }
  const auto& aa = ours.header().schema.aliases;
  const auto& ba = root.header().schema.aliases;
  ASSERT_EQ(aa.size(), ba.size());
  for (size_t i = 0; i < aa.size(); ++i) {
    EXPECT_EQ(std::tie(aa[i].physical_id, aa[i].field_id),
              std::tie(ba[i].physical_id, ba[i].field_id));
  }
}

// The muons of ROOT's importer-written file as column batches: nMuon, then the members.
std::vector<rootio::Column> MuonColumns(const rootio::Rntuple& r,
                                        const std::vector<BranchSpec>& specs) {
  std::vector<rootio::Column> cols(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    cols[i].type = specs[i].type;
    cols[i].num_entries = static_cast<int64_t>(r.entries());
    cols[i].jagged = !specs[i].count.empty();
    if (cols[i].jagged) {
      cols[i].offsets.push_back(0);
    }
  }
  for (size_t i = 1; i < specs.size(); ++i) {
    auto values = r.Read(*r.FindField(specs[i].name), 0, r.entries());
    EXPECT_TRUE(values.has_value());
    for (const RntupleValue& entry : *values) {
      for (const RntupleValue& v : entry.items) {
        if (specs[i].type == LeafType::kFloat32) {
          AppendValue(cols[i], static_cast<float>(v.d));
        } else {
          AppendValue(cols[i], static_cast<int32_t>(v.i));
        }
      }
      cols[i].offsets.push_back(cols[i].offsets.back() + entry.items.size());
      if (i == 1) {
        AppendValue(cols[0], static_cast<uint32_t>(entry.items.size()));
      }
    }
  }
  return cols;
}

TEST(RntupleWriter, LaysOutATreeAsRootsImporterDoes) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened root = Open(testing::RntupleDataFile(kMuons));
  ASSERT_NE(root.ntuple, nullptr);
  const std::vector<BranchSpec> specs = {
      {"nMuon", LeafType::kUInt32},
      {"Muon_pt", LeafType::kFloat32, 1, "nMuon"},
      {"Muon_eta", LeafType::kFloat32, 1, "nMuon"},
      {"Muon_phi", LeafType::kFloat32, 1, "nMuon"},
      {"Muon_mass", LeafType::kFloat32, 1, "nMuon"},
      {"Muon_charge", LeafType::kInt32, 1, "nMuon"},
  };
  std::vector<rootio::Column> cols = MuonColumns(*root.ntuple, specs);
  testing::TempDir dir;
  const std::string path = dir.File("muons.root");
  {
    auto file = FileWriter::Create(path, sample::Fixed({codec::Algorithm::kZstd, 5}));
    ASSERT_TRUE(file.has_value());
    RntupleWriter w(**file, {});
    for (const BranchSpec& s : specs) {
      ASSERT_TRUE(w.AddBranch(s).has_value());
    }
    std::vector<const rootio::Column*> ptrs;
    for (const rootio::Column& c : cols) {
      ptrs.push_back(&c);
    }
    ASSERT_TRUE(w.WriteColumns(ptrs).has_value());
    ASSERT_TRUE(w.Close().has_value());
    ASSERT_TRUE((*file)->Close().has_value());
  }
  Opened ours = Open(path);
  ASSERT_NE(ours.ntuple, nullptr);
  ExpectSameSchema(*ours.ntuple, *root.ntuple);
  ASSERT_EQ(ours.ntuple->entries(), root.ntuple->entries());
  for (const char* field :
       {"nMuon", "Muon_pt", "Muon_eta", "Muon_phi", "Muon_mass", "Muon_charge"}) {
    auto a = ours.ntuple->Read(*ours.ntuple->FindField(field), 0, 1000);
    auto b = root.ntuple->Read(*root.ntuple->FindField(field), 0, 1000);
    ASSERT_TRUE(a.has_value() && b.has_value()) << field;
    EXPECT_EQ(RntupleValue::List(*a).ToJson(), RntupleValue::List(*b).ToJson()) << field;
  }
  // Same data, same codec, same single page per column: about the bytes ROOT stored.
  const auto& ac = ours.ntuple->clusters()[0].columns;
  const auto& bc = root.ntuple->clusters()[0].columns;
  for (size_t k = 0; k < bc.size(); ++k) {
    ASSERT_EQ(ac[k].pages.size(), bc[k].pages.size());
    EXPECT_EQ(ac[k].pages[0].elements, bc[k].pages[0].elements);
  }
}

TEST(RntupleWriter, AnchorKeyAndStreamerInfoAsRootWritesThem) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  testing::TempDir dir;
  const std::string path = dir.File("sample.root");
  ASSERT_TRUE(sample::WriteRntuple(path, sample::Fixed(), {}, 100).has_value());
  auto ours = rootio::RootFile::OpenPath(path);
  auto root = rootio::RootFile::OpenPath(testing::RntupleDataFile(kMuons));
  ASSERT_TRUE(ours.has_value() && root.has_value());
  auto keys = (*ours)->ListKeys("");
  auto root_keys = (*root)->ListKeys("");
  ASSERT_TRUE(keys.has_value() && root_keys.has_value());
  ASSERT_EQ(keys->size(), 1u);
  EXPECT_EQ((*keys)[0].class_name, (*root_keys)[0].class_name);
  EXPECT_EQ((*keys)[0].name, "Events");
  EXPECT_EQ((*keys)[0].title, (*root_keys)[0].title);
  EXPECT_EQ((*keys)[0].objlen, (*root_keys)[0].objlen);
  // The anchor's byte count and class version as ROOT streams them (the checksum after them
  // lies outside the count).
  auto anchor = (*ours)->ReadObject((*keys)[0]);
  auto root_anchor = (*root)->ReadObject((*root_keys)[0]);
  ASSERT_TRUE(anchor.has_value() && root_anchor.has_value());
  EXPECT_TRUE(std::equal(anchor->begin(), anchor->begin() + 6, root_anchor->begin()));
  // The StreamerInfo record jsroot needs to stream the anchor: ROOT's, byte for byte, but for
  // the objects' fBits, which ROOT 6.35 writes as 0 where 6.22 (whose TTree records ferry
  // writes) sets kNotDeleted/kIsOnHeap: the only bytes that may differ are such flag bytes.
  auto infos = (*ours)->ReadStreamerInfo();
  auto root_infos = (*root)->ReadStreamerInfo();
  ASSERT_TRUE(infos.has_value() && root_infos.has_value());
  ASSERT_EQ(infos->size(), 1u);
  ASSERT_EQ(root_infos->size(), 1u);
  EXPECT_EQ(std::tie((*infos)[0].class_name, (*infos)[0].class_version, (*infos)[0].checksum),
            std::tie((*root_infos)[0].class_name, (*root_infos)[0].class_version,
                     (*root_infos)[0].checksum));
  auto si = rootio::ReadKey((*ours)->source(), (*ours)->header().seek_info);
  auto root_si = rootio::ReadKey((*root)->source(), (*root)->header().seek_info);
  ASSERT_TRUE(si.has_value() && root_si.has_value());
  auto a = (*ours)->ReadObject(*si);
  auto b = (*root)->ReadObject(*root_si);
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    if ((*a)[i] != (*b)[i]) {
      EXPECT_TRUE((*b)[i] == 0 && (*a)[i] <= 3) << "StreamerInfo byte " << i;
    }
  }
  Opened in = Open(path);
  ASSERT_NE(in.ntuple, nullptr);
  EXPECT_EQ(in.ntuple->anchor().Version(), "1.0.0.0");
  EXPECT_EQ(in.ntuple->anchor().max_key_size, uint64_t{1} << 30);
  EXPECT_EQ(in.ntuple->header().writer.rfind("ferry ", 0), 0u);
}

TEST(RntupleWriter, PageChecksumsCatchAFlippedByte) {
  testing::TempDir dir;
  const std::string path = dir.File("none.root");
  ASSERT_TRUE(sample::WriteRntuple(path, sample::Fixed({codec::Algorithm::kNone, 0}), {}, 500));
  uint64_t page_at = 0;
  {
    Opened in = Open(path);
    ASSERT_NE(in.ntuple, nullptr);
    uint32_t f = *in.ntuple->FindField("d");
    uint32_t col = in.ntuple->Representation(f, 0)[0];
    page_at = in.ntuple->clusters()[0].columns[col].pages[0].locator.offset;
  }
  std::vector<uint8_t> bytes = testing::ReadWholeFile(path);
  bytes[page_at + 3] ^= 0x10;
  testing::WriteWholeFile(path, bytes);
  Opened in = Open(path);
  ASSERT_NE(in.ntuple, nullptr);
  auto v = in.ntuple->Read(*in.ntuple->FindField("d"), 0, 10);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), ErrorCode::kCorruption) << v.error().ToString();
  EXPECT_TRUE(in.ntuple->Read(*in.ntuple->FindField("f"), 0, 10).has_value());
}

TEST(RntupleWriter, AnRntupleWithoutEntries) {
  testing::TempDir dir;
  const std::string path = dir.File("empty.root");
  ASSERT_TRUE(sample::WriteRntuple(path, sample::Fixed(), {}, 0).has_value());
  Opened in = Open(path);
  ASSERT_NE(in.ntuple, nullptr);
  EXPECT_EQ(in.ntuple->entries(), 0u);
  EXPECT_TRUE(in.ntuple->clusters().empty());
  EXPECT_TRUE(in.ntuple->FindField("Obj_pt").has_value());
}

TEST(RntupleWriter, RefusesWhatItCannotLayOutAndStaysFailed) {
  testing::TempDir dir;
  auto file = FileWriter::Create(dir.File("bad.root"), sample::Fixed());
  ASSERT_TRUE(file.has_value());
  {
    RntupleWriter w(**file, {});
    for (const BranchSpec& bad :
         {BranchSpec{"s", LeafType::kString, 1, "nX"},
          BranchSpec{"arr", LeafType::kFloat32, 3, "nX"},
          BranchSpec{"x", LeafType::kFloat32, 1, "nX"}, BranchSpec{"u", LeafType::kUnknown}}) {
      auto st = w.AddBranch(bad);
      ASSERT_FALSE(st.has_value()) << bad.name;
      EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(st.error().ToString().find("branch " + bad.name), std::string::npos)
          << st.error().ToString();
    }
    EXPECT_EQ(w.num_branches(), 0u);  // refused branches are not declared
  }
  RntupleWriter w(**file, {});
  for (const BranchSpec& s : sample::RntupleBranches()) {
    ASSERT_TRUE(w.AddBranch(s).has_value());
  }
  std::vector<rootio::Column> cols = sample::RntupleBatch(0, 10);
  const std::vector<BranchSpec> specs = sample::RntupleBranches();
  size_t n_obj = 0;
  while (specs[n_obj].name != "nObj") {
    ++n_obj;
  }
  cols[n_obj].bytes[4] += 1;  // nObj of entry 1 no longer matches Obj_pt's offsets
  std::vector<const rootio::Column*> ptrs;
  for (const rootio::Column& c : cols) {
    ptrs.push_back(&c);
  }
  Status st = w.WriteColumns(ptrs);
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().ToString().find("its counter nObj"), std::string::npos)
      << st.error().ToString();
  // Sticky, as TreeWriter: a good batch and Close fail with the first error.
  std::vector<rootio::Column> good = sample::RntupleBatch(0, 10);
  for (size_t i = 0; i < good.size(); ++i) {
    ptrs[i] = &good[i];
  }
  Status again = w.WriteColumns(ptrs);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().ToString().find("its counter nObj"), std::string::npos);
  EXPECT_FALSE(w.Close().has_value());
}

// Encodings checked against bytes worked out by hand, without the reader.
TEST(RntuplePageEncoding, SplitZigzagDeltaAndBits) {
  ByteVector out;
  const int32_t ints[] = {1, -1, 256};
  EncodePage(rootio::ColumnType::kSplitInt32, {reinterpret_cast<const uint8_t*>(ints), 12}, 3,
             &out);
  // zigzag: 2, 1, 512 = 0x200; then all first bytes, all second bytes...
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()),
            (std::vector<uint8_t>{2, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0}));
  const uint64_t offsets[] = {3, 5, 5, 0x103};
  EncodePage(rootio::ColumnType::kSplitIndex64, {reinterpret_cast<const uint8_t*>(offsets), 32}, 4,
             &out);
  // delta: 3, 2, 0, 0xFE
  std::vector<uint8_t> want(32, 0);
  want[0] = 3;
  want[1] = 2;
  want[3] = 0xFE;
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), want);
  const uint8_t bools[] = {1, 0, 1, 1, 0, 0, 0, 0, 1};
  EncodePage(rootio::ColumnType::kBit, bools, 9, &out);
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), (std::vector<uint8_t>{0x0D, 0x01}));
  const float reals[] = {1.0f};  // 0x3F800000
  EncodePage(rootio::ColumnType::kReal32, {reinterpret_cast<const uint8_t*>(reals), 4}, 1, &out);
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), (std::vector<uint8_t>{0, 0, 0x80, 0x3F}));
}

}  // namespace
}  // namespace ferry::rootwrite
