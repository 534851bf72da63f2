// Column copies (docs/format/store.md section 12): the copy file and manifest table parsers,
// the store's conf, and scans that build, use, survive the loss of, and evict copies.
#include "store/copies.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "base/endian.h"
#include "store/column_copy.h"
#include "store/converter.h"
#include "store/store.h"
#include "testing/testing.h"

namespace ferry::store {
namespace {

constexpr const char* kNano = "nanoAOD_2015_CMS_Open_Data_ttbar.root";

void ConvertOrDie(const std::string& out, uint8_t log2_ks = 6) {
  ConvertOptions o;
  o.inputs = {testing::RootDataFile(kNano)};
  o.out_dir = out;
  o.block_size = 8 * 1024;
  o.log2_ks = log2_ks;  // several S blocks, so copies have several chunks
  auto r = Convert(o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
}

// Every batch's values of the columns, concatenated per column.
std::vector<std::vector<uint8_t>> ScanBytes(Store& s,
                                            const std::vector<std::string>& names,
                                            const ScanOptions& options = {},
                                            ScanReport* report = nullptr) {
  auto cols = s.ResolveColumns(names);
  EXPECT_TRUE(cols.has_value());
  std::vector<std::vector<uint8_t>> out(names.size());
  auto st = s.Scan(
      *cols,
      [&](const ScanBatch& b) {
        for (size_t k = 0; k < out.size(); ++k) {
          out[k].insert(out[k].end(), b.columns[k].bytes.begin(), b.columns[k].bytes.end());
        }
        return OkStatus();
      },
      options, report);
  EXPECT_TRUE(st.has_value()) << st.error().ToString();
  return out;
}

std::unique_ptr<Store> OpenOrDie(const std::string& dir) {
  auto s = Store::Open(dir);
  EXPECT_TRUE(s.has_value()) << s.error().ToString();
  return std::move(*s);
}

TEST(ColumnCopy, HeaderRoundTripAndChecks) {
  CopyHeader h{.run = 7,
               .generation = 2,
               .column = 5,
               .schema_hash = 99,
               .events = 100,
               .s_blocks = 2,
               .log2_ks = 6,
               .crc_directory = 1234};
  std::vector<uint8_t> bytes = h.Serialize();
  ASSERT_EQ(bytes.size(), kCopyHeaderSize);
  auto back = CopyHeader::Parse(bytes, 64 + 32 + 10);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->run, 7u);
  EXPECT_EQ(back->column, 5u);
  EXPECT_EQ(back->s_blocks, 2u);
  EXPECT_FALSE(CopyHeader::Parse(bytes, 64 + 31).has_value());  // no room for the directory
  bytes[20] ^= 1;
  EXPECT_FALSE(CopyHeader::Parse(bytes, 1000).has_value());  // header CRC
  CopyHeader wrong = h;
  wrong.s_blocks = 3;  // 100 events of 64 per block are 2 blocks
  EXPECT_FALSE(CopyHeader::Parse(wrong.Serialize(), 1000).has_value());
  EXPECT_FALSE(CopyHeader::Parse(std::span(bytes).first(10), 1000).has_value());
}

TEST(ColumnCopy, DirectoryBounds) {
  CopyHeader h{.events = 100, .s_blocks = 2, .log2_ks = 6};
  std::vector<uint8_t> dir;
  AppendChunkRef(dir, {64, 10, 0});
  AppendChunkRef(dir, {74, 10, 0});
  h.crc_directory = crc32c::Value(dir);
  const uint64_t size = 64 + 20 + 32;
  auto refs = ParseCopyDirectory(dir, h, size);
  ASSERT_TRUE(refs.has_value()) << refs.error().ToString();
  EXPECT_EQ((*refs)[1].offset, 74u);
  EXPECT_FALSE(ParseCopyDirectory(dir, h, size - 1).has_value());  // chunk 1 past the directory
  std::vector<uint8_t> overlap;
  AppendChunkRef(overlap, {64, 10, 0});
  AppendChunkRef(overlap, {70, 10, 0});
  h.crc_directory = crc32c::Value(overlap);
  EXPECT_FALSE(ParseCopyDirectory(overlap, h, size).has_value());
}

TEST(CopiesConf, ParsesAndNamesBadLines) {
  auto c = ParseCopiesConf("# comment\ncolumn_copies = auto\ncolumn_copies_budget = 10%\n");
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->auto_build);
  EXPECT_EQ(c->Budget(1000), 100u);
  auto sized = ParseCopiesConf("column_copies_budget = 2K");
  ASSERT_TRUE(sized.has_value());
  EXPECT_EQ(sized->Budget(1), 2048u);
  EXPECT_EQ(ParseCopiesConf("").value().Budget(1000), 150u);  // the default, 15%
  auto bad = ParseCopiesConf("\ncolumn_copies = sometimes\n");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().ToString().find("line 2"), std::string::npos);
  EXPECT_FALSE(ParseCopiesConf("colum_copies = auto").has_value());
  EXPECT_FALSE(ParseCopiesConf("column_copies_budget = 120%").has_value());
}

TEST(Copies, ScanWithCopiesEqualsScanWithout) {
  testing::TempDir tmp;
  ConvertOrDie(tmp.path());
  const std::vector<std::string> cols = {"Muon_pt", "Jet_eta", "MET_pt", "nJet"};
  auto s = OpenOrDie(tmp.path());
  ScanReport first;
  const auto plain = ScanBytes(*s, cols, {.build_copies = true}, &first);
  ASSERT_TRUE(first.published.has_value()) << first.not_built;
  EXPECT_EQ(first.published->added.size(), 2u);  // Muon_pt and Jet_eta, one shard
  EXPECT_EQ(first.columns[0].shards_from_blocks, 1u);
  auto again = OpenOrDie(tmp.path());
  EXPECT_EQ(again->manifest().copies.size(), 2u);
  ScanReport second;
  EXPECT_EQ(ScanBytes(*again, cols, {}, &second), plain);
  EXPECT_EQ(second.columns[0].shards_from_copies, 1u);
  EXPECT_EQ(second.columns[0].shards_from_blocks, 0u);
  EXPECT_TRUE(second.copy_errors.empty());
  auto v = again->Verify();
  ASSERT_TRUE(v.has_value()) << v.error().ToString();
  EXPECT_EQ(v->copies, 2u);
}

// Byte offset of the first chunk of a copy file (its directory's first entry).
uint64_t FirstChunkOffset(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  auto h = CopyHeader::Parse(bytes, bytes.size());
  EXPECT_TRUE(h.has_value());
  return LoadLE<uint64_t>(bytes.data() + h->directory_offset(bytes.size()));
}

TEST(Copies, CorruptCopyIsNamedAndScanFallsBack) {
  testing::TempDir tmp;
  ConvertOrDie(tmp.path());
  auto s = OpenOrDie(tmp.path());
  const auto plain = ScanBytes(*s, {"Muon_pt"}, {.build_copies = true});
  auto built = OpenOrDie(tmp.path());
  ASSERT_EQ(built->manifest().copies.size(), 1u);
  const std::string path = tmp.File(built->manifest().copies[0].file_name());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(FirstChunkOffset(path)));
    f.put('\x55');
  }
  ScanReport rep;
  EXPECT_EQ(ScanBytes(*built, {"Muon_pt"}, {}, &rep), plain);
  ASSERT_EQ(rep.copy_errors.size(), 1u);
  EXPECT_NE(rep.copy_errors[0].ToString().find(path), std::string::npos)
      << rep.copy_errors[0].ToString();
  EXPECT_FALSE(built->Verify().has_value());  // verify names the corrupt copy too
  // A scan that builds copies and finds it corrupt drops it; the next one builds it again.
  ScanReport dropping;
  auto again = OpenOrDie(tmp.path());
  EXPECT_EQ(ScanBytes(*again, {"Muon_pt"}, {.build_copies = true}, &dropping), plain);
  ASSERT_TRUE(dropping.published.has_value());
  EXPECT_EQ(dropping.published->evicted.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(OpenOrDie(tmp.path())->manifest().copies.empty());
  ScanReport rebuild;
  auto third = OpenOrDie(tmp.path());
  EXPECT_EQ(ScanBytes(*third, {"Muon_pt"}, {.build_copies = true}, &rebuild), plain);
  ASSERT_TRUE(rebuild.published.has_value());
  EXPECT_EQ(rebuild.published->added.size(), 1u);
  EXPECT_TRUE(OpenOrDie(tmp.path())->Verify().has_value());
}

TEST(Copies, MissingCopyFileFallsBack) {
  testing::TempDir tmp;
  ConvertOrDie(tmp.path());
  auto s = OpenOrDie(tmp.path());
  const auto plain = ScanBytes(*s, {"Jet_pt"}, {.build_copies = true});
  auto built = OpenOrDie(tmp.path());
  std::filesystem::remove(tmp.File(built->manifest().copies[0].file_name()));
  ScanReport rep;
  EXPECT_EQ(ScanBytes(*built, {"Jet_pt"}, {}, &rep), plain);
  EXPECT_EQ(rep.copy_errors.size(), 1u);
}

void SetMtime(const std::string& path, int64_t seconds) {
  const struct timespec t[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, 0), 0);
}

TEST(Copies, BudgetEvictsLeastRecentlyScannedFirst) {
  testing::TempDir tmp;
  ConvertOrDie(tmp.path());
  for (const char* c : {"Jet_pt", "Jet_eta", "Jet_phi"}) {
    auto s = OpenOrDie(tmp.path());
    ScanBytes(*s, {c}, {.build_copies = true});
  }
  auto s = OpenOrDie(tmp.path());
  ASSERT_EQ(s->manifest().copies.size(), 3u);
  // Scanned last: Jet_pt (newest), then Jet_phi, then Jet_eta (oldest).
  uint64_t total = 0;
  for (const CopyEntry& c : s->manifest().copies) {
    const std::string name = s->schema().columns[c.column].name;
    SetMtime(tmp.File(c.file_name()), name == "Jet_pt" ? 3000 : name == "Jet_phi" ? 2000 : 1000);
    total += c.bytes;
  }
  // A budget just under the copies there are, then a build of one more copy: at least one
  // eviction, in last-scanned order (Jet_mass, just built, is the most recent).
  std::ofstream(tmp.File(kStoreConfName)) << "column_copies_budget = " << (total - 1) << "\n";
  ScanReport rep;
  ScanBytes(*s, {"Jet_mass"}, {.build_copies = true}, &rep);
  ASSERT_TRUE(rep.published.has_value());
  std::vector<std::string> evicted;
  for (const CopyEntry& e : rep.published->evicted) {
    evicted.push_back(s->schema().columns[e.column].name);
  }
  ASSERT_FALSE(evicted.empty());
  EXPECT_EQ(evicted[0], "Jet_eta");
  if (evicted.size() > 1) {
    EXPECT_EQ(evicted[1], "Jet_phi");
  }
  EXPECT_LE(rep.published->copy_bytes, rep.published->budget);
  auto after = OpenOrDie(tmp.path());
  EXPECT_NE(
      after->manifest().FindCopy(after->manifest().runs[0].run, after->schema().Find("Jet_pt")),
      nullptr);
  EXPECT_TRUE(after->Verify().has_value());
}

TEST(Copies, DropRemovesFilesAndEntries) {
  testing::TempDir tmp;
  ConvertOrDie(tmp.path());
  auto s = OpenOrDie(tmp.path());
  ScanBytes(*s, {"Muon_pt", "Muon_eta"}, {.build_copies = true});
  auto built = OpenOrDie(tmp.path());
  std::vector<int32_t> cols = {built->schema().Find("Muon_pt")};
  const std::string muon_pt =
      tmp.File(built->manifest().FindCopy(built->manifest().runs[0].run, cols[0])->file_name());
  auto ch = DropCopies(tmp.path(), cols);
  ASSERT_TRUE(ch.has_value()) << ch.error().ToString();
  auto after = OpenOrDie(tmp.path());
  ASSERT_EQ(after->manifest().copies.size(), 1u);
  EXPECT_EQ(after->schema().columns[after->manifest().copies[0].column].name, "Muon_eta");
  EXPECT_EQ(std::filesystem::exists(muon_pt), false);
}

TEST(Copies, ManifestTableRoundTripAndChecks) {
  testing::TempDir tmp;
  ConvertOrDie(tmp.path());
  auto s = OpenOrDie(tmp.path());
  Manifest m = s->manifest();
  const auto jet_pt = static_cast<uint32_t>(m.schema.Find("Jet_pt"));
  m.copies.push_back({.id = 1,
                      .column = jet_pt,
                      .run = m.runs[0].run,
                      .generation = m.runs[0].generation,
                      .bytes = 100});
  m.next_copy_id = 2;
  auto back = Manifest::Parse(m.Serialize());
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  ASSERT_EQ(back->copies.size(), 1u);
  EXPECT_EQ(back->copies[0].column, jet_pt);
  EXPECT_TRUE((back->flags & kManifestFlagCopies) != 0);
  Manifest scalar = m;
  scalar.copies[0].column = static_cast<uint32_t>(m.schema.Find("MET_pt"));
  EXPECT_FALSE(Manifest::Parse(scalar.Serialize()).has_value());
  Manifest stale = m;
  stale.copies[0].generation += 1;  // a shard the run table does not name
  EXPECT_FALSE(Manifest::Parse(stale.Serialize()).has_value());
  Manifest id = m;
  id.next_copy_id = 1;  // ids are below next_copy_id
  EXPECT_FALSE(Manifest::Parse(id.Serialize()).has_value());
}

}  // namespace
}  // namespace ferry::store
