#include "rootwrite/file_writer.h"

#include <cstring>
#include <map>

#include <gtest/gtest.h>

#include "base/endian.h"
#include "rootio/cursor.h"
#include "rootio/file_header.h"
#include "rootio/key.h"
#include "rootio/root_file.h"
#include "rootio/verify.h"
#include "rootwrite/sample_tree.h"
#include "rootwrite/tree_writer.h"
#include "testing/testing.h"

namespace ferry::rootwrite {
namespace {

using rootio::LeafType;

FileOptions Options(bool big) {
  FileOptions o;
  o.compression = {codec::Algorithm::kZstd, 5};
  o.force_big = big;
  o.datime = PackDatime(1700000000);
  o.uuid_seed = 11;
  o.title = "a title";
  return o;
}

struct Parsed {
  std::vector<uint8_t> bytes;
  rootio::FileHeader header;
  rootio::DirectoryRecord dir;
  rootio::Key free_key;
  std::vector<uint8_t> free_payload;
};

Parsed ParseWritten(const std::string& path) {
  Parsed p;
  p.bytes = testing::ReadWholeFile(path);
  auto h = rootio::ParseFileHeader(p.bytes, p.bytes.size());
  EXPECT_TRUE(h.has_value()) << h.error().ToString();
  p.header = *h;
  auto d = rootio::ParseDirectoryRecord(std::span<const uint8_t>(p.bytes).subspan(
      static_cast<size_t>(p.header.begin + p.header.nbytes_name)));
  EXPECT_TRUE(d.has_value());
  p.dir = *d;
  rootio::Cursor c(p.bytes, static_cast<size_t>(p.header.seek_free));
  auto k = rootio::ParseKey(c);
  EXPECT_TRUE(k.has_value());
  p.free_key = *k;
  p.free_payload.assign(
      p.bytes.begin() + static_cast<ptrdiff_t>(p.header.seek_free + k->keylen),
      p.bytes.begin()
          + static_cast<ptrdiff_t>(p.header.seek_free + static_cast<uint64_t>(k->nbytes)));
  return p;
}

// Walks the file record by record from fBEGIN: every record's fNbytes must lead exactly to the
// next key header and the last one must end at fEND (no gap, no overlap, nothing after).
std::map<std::string, int> WalkRecords(const Parsed& p) {
  std::map<std::string, int> classes;
  uint64_t pos = static_cast<uint64_t>(p.header.begin);
  while (pos < p.header.end) {
    rootio::Cursor c(p.bytes, static_cast<size_t>(pos));
    auto k = rootio::ParseKey(c);
    EXPECT_TRUE(k.has_value()) << "no key at " << pos;
    if (!k.has_value()) {
      break;
    }
    EXPECT_EQ(k->seek_key, pos) << k->class_name << " " << k->name;
    ++classes[k->class_name];
    pos += static_cast<uint64_t>(k->nbytes);
  }
  EXPECT_EQ(pos, p.header.end);
  return classes;
}

TEST(FileWriter, RecordsTileTheFileAndEveryLeafReadsBack) {
  testing::TempDir dir;
  for (bool big : {false, true}) {
    std::string path = dir.File(big ? "tile-big.root" : "tile.root");
    ASSERT_TRUE(
        sample::Write(path, Options(big), TreeOptions{.basket_size = 700}, true, true).has_value());
    Parsed p = ParseWritten(path);
    auto classes = WalkRecords(p);
    EXPECT_EQ(classes["TFile"], 3);  // top directory, keys list, free segments
    EXPECT_EQ(classes["TTree"], 2);
    EXPECT_EQ(classes["TList"], 1);
    EXPECT_GT(classes["TBasket"], 100);
    EXPECT_EQ(classes.size(), 4u);
    auto f = rootio::RootFile::OpenPath(path);
    ASSERT_TRUE(f.has_value());
    auto stats = rootio::ReadAllTrees(**f);
    ASSERT_TRUE(stats.has_value()) << stats.error().ToString();
    EXPECT_EQ(stats->trees, 2u);
    EXPECT_EQ(stats->leaves_unsupported, 0u);
    EXPECT_EQ(stats->leaves_read, 18u);
  }
}

TEST(FileWriter, SmallFileLayout) {
  testing::TempDir dir;
  std::string path = dir.File("small.root");
  ASSERT_TRUE(sample::Write(path, Options(false), TreeOptions{}, true, true).has_value());
  Parsed p = ParseWritten(path);
  EXPECT_EQ(std::string(p.bytes.begin(), p.bytes.begin() + 4), "root");
  EXPECT_FALSE(p.header.big);
  EXPECT_EQ(p.header.version, kRootVersion);
  EXPECT_EQ(p.header.begin, 100);
  EXPECT_EQ(p.header.end, p.bytes.size());
  EXPECT_EQ(p.header.units, 4);
  EXPECT_EQ(p.header.compress, 505);
  EXPECT_EQ(p.header.nfree, 1);
  // fNbytesName: TFile key + name and title strings.
  EXPECT_EQ(p.header.nbytes_name,
            KeyHeaderLength(false, "TFile", "small.root", "a title") + 11 + 8);
  EXPECT_EQ(p.dir.version, 5);
  EXPECT_EQ(p.dir.seek_dir, 100u);
  EXPECT_EQ(p.dir.seek_parent, 0u);
  EXPECT_GT(p.dir.seek_keys, 100u);
  // The free-segments record is the last one: one segment [fEND, 2e9].
  EXPECT_EQ(p.header.seek_free + static_cast<uint64_t>(p.header.nbytes_free), p.header.end);
  ASSERT_EQ(p.free_payload.size(), 10u);
  EXPECT_EQ(LoadBE<int16_t>(p.free_payload.data()), 1);
  EXPECT_EQ(LoadBE<uint32_t>(p.free_payload.data() + 2), p.header.end);
  EXPECT_EQ(LoadBE<uint32_t>(p.free_payload.data() + 6), 2000000000u);

  auto f = rootio::RootFile::OpenPath(path);
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  auto keys = (*f)->ListKeys("");
  ASSERT_TRUE(keys.has_value());
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].name, "Events");
  EXPECT_EQ((*keys)[0].class_name, "TTree");
  EXPECT_EQ((*keys)[0].cycle, 1);
  EXPECT_EQ((*keys)[1].name, "Meta");
  EXPECT_EQ((*keys)[1].title, "run metadata");
  // StreamerInfo covers the classes written, with ROOT 6's versions.
  auto infos = (*f)->ReadStreamerInfo();
  ASSERT_TRUE(infos.has_value()) << infos.error().ToString();
  std::map<std::string, int32_t> versions;
  for (const auto& e : *infos) {
    versions[e.class_name] = e.class_version;
  }
  EXPECT_EQ(versions["TTree"], 20);
  EXPECT_EQ(versions["TBranch"], 13);
  EXPECT_EQ(versions["TLeaf"], 2);
  for (const char* leaf :
       {"TLeafO", "TLeafB", "TLeafS", "TLeafI", "TLeafL", "TLeafF", "TLeafD", "TLeafC"}) {
    EXPECT_EQ(versions[leaf], 1) << leaf;
  }
  for (const char* cls :
       {"TObjArray", "TNamed", "TObject", "TAttLine", "TAttFill", "TAttMarker", "ROOT::TIOFeatures",
        "TCollection", "TSeqCollection", "TList", "TString"}) {
    EXPECT_TRUE(versions.count(cls)) << cls;
  }
}

TEST(FileWriter, ForcedBigFormUsesWideFieldsEverywhere) {
  testing::TempDir dir;
  std::string path = dir.File("big.root");
  ASSERT_TRUE(sample::Write(path, Options(true), TreeOptions{}, true).has_value());
  Parsed p = ParseWritten(path);
  EXPECT_TRUE(p.header.big);
  EXPECT_EQ(LoadBE<int32_t>(p.bytes.data() + 4), kRootVersion + 1000000);
  EXPECT_EQ(p.header.units, 8);
  EXPECT_EQ(p.header.end, p.bytes.size());
  EXPECT_EQ(p.dir.version, 1005);
  EXPECT_EQ(p.free_key.version, 1004);
  ASSERT_EQ(p.free_payload.size(), 18u);
  EXPECT_EQ(LoadBE<int16_t>(p.free_payload.data()), 1001);
  EXPECT_EQ(LoadBE<uint64_t>(p.free_payload.data() + 2), p.header.end);
  auto f = rootio::RootFile::OpenPath(path);
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  auto keys = (*f)->ListKeys("");
  ASSERT_TRUE(keys.has_value());
  ASSERT_EQ(keys->size(), 1u);
  EXPECT_EQ((*keys)[0].version, 1004);
}

TEST(FileWriter, RecordsCanBeReadBackByOffset) {
  testing::TempDir dir;
  std::string path = dir.File("rec.root");
  auto w = FileWriter::Create(path, Options(false));
  ASSERT_TRUE(w.has_value());
  std::vector<uint8_t> payload(100000);
  for (size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<uint8_t>(i % 7);
  }
  RecordSlot slot = (*w)->NextRecord("TObjString", "blob", "");
  auto info =
      (*w)->WriteRecord(slot, "TObjString", "blob", "", payload, (*w)->options().compression);
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->compressed);
  EXPECT_EQ(info->objlen, 100000);
  // A stale slot is refused.
  EXPECT_FALSE((*w)->WriteRecord(slot, "TObjString", "blob", "", payload, {}).has_value());
  (*w)->AddToDirectory("TObjString", "blob", "", *info);
  ASSERT_TRUE((*w)->Close().has_value());
  EXPECT_FALSE((*w)->Close().has_value());
  auto f = rootio::RootFile::OpenPath(path);
  ASSERT_TRUE(f.has_value());
  auto key = (*f)->FindKey("blob");
  ASSERT_TRUE(key.has_value());
  auto back = (*f)->ReadObject(*key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, payload);
}

TEST(FileWriter, RawRecordsJoinTheirPartsUncompressed) {
  testing::TempDir dir;
  std::string path = dir.File("raw.root");
  FileOptions o = Options(false);
  o.write_buffer_bytes = 4096;  // the last part is larger: written past the staging buffer
  auto w = FileWriter::Create(path, o);
  ASSERT_TRUE(w.has_value());
  const std::vector<uint8_t> a(10, 1), b, c(9000, 3);
  const std::span<const uint8_t> parts[] = {a, b, c};
  RecordSlot slot = (*w)->NextRecord("TObjString", "raw", "");
  auto info = (*w)->WriteRawRecord(slot, "TObjString", "raw", "", parts);
  ASSERT_TRUE(info.has_value());
  EXPECT_FALSE(info->compressed);
  EXPECT_EQ(info->objlen, 9010);
  EXPECT_EQ(info->nbytes, slot.key_len + 9010);
  EXPECT_EQ((*w)->end(), slot.seek + static_cast<uint64_t>(info->nbytes));
  EXPECT_FALSE((*w)->WriteRawRecord(slot, "TObjString", "raw", "", parts).has_value());
  (*w)->AddToDirectory("TObjString", "raw", "", *info);
  ASSERT_TRUE((*w)->Close().has_value());
  auto f = rootio::RootFile::OpenPath(path);
  ASSERT_TRUE(f.has_value());
  auto key = (*f)->FindKey("raw");
  ASSERT_TRUE(key.has_value());
  auto back = (*f)->ReadObject(*key);
  ASSERT_TRUE(back.has_value());
  std::vector<uint8_t> want = a;
  want.insert(want.end(), c.begin(), c.end());
  EXPECT_EQ(*back, want);
}

TEST(FileWriter, BasketsLargerThanOneBlockUseSeveralBlocks) {
  testing::TempDir dir;
  std::string path = dir.File("multi.root");
  FileOptions fo = Options(false);
  fo.compression = {codec::Algorithm::kZlib, 1};
  auto w = FileWriter::Create(path, fo);
  ASSERT_TRUE(w.has_value());
  TreeOptions to;
  to.basket_size = 40 << 20;
  to.max_basket_size = 40 << 20;
  to.auto_flush = 0;
  TreeWriter tw(**w, to);
  int32_t x = *tw.AddBranch({"x", LeafType::kFloat64});
  constexpr int kN = 3 << 20;  // 24 MiB of doubles in one basket
  rootio::Column col;
  col.type = LeafType::kFloat64;
  col.num_entries = kN;
  col.bytes.resize(sizeof(double) * kN);
  for (int e = 0; e < kN; ++e) {
    double v = static_cast<double>(e % 1000) * 0.25;
    std::memcpy(col.bytes.data() + sizeof(double) * static_cast<size_t>(e), &v, sizeof v);
  }
  const rootio::Column* cols[] = {&col};
  ASSERT_TRUE(tw.WriteColumns(cols).has_value());
  (void)x;
  ASSERT_TRUE(tw.Close().has_value());
  ASSERT_TRUE((*w)->Close().has_value());
  auto f = rootio::RootFile::OpenPath(path);
  ASSERT_TRUE(f.has_value());
  auto t = (*f)->OpenTree("Events");
  ASSERT_TRUE(t.has_value());
  const rootio::Branch& b = (*t)->info().branches[0];
  ASSERT_EQ(b.baskets.size(), 1u);
  auto record = (*t)->ReadBasketRecord(0, 0);
  ASSERT_TRUE(record.has_value());
  auto header = rootio::ParseBasketHeader(*record);
  ASSERT_TRUE(header.has_value());
  // Count the blocks of the stored payload.
  std::span<const uint8_t> stored = std::span<const uint8_t>(*record).subspan(header->key.keylen);
  int blocks = 0;
  for (size_t pos = 0; pos < stored.size(); ++blocks) {
    auto bh = codec::ParseBlockHeader(stored.subspan(pos));
    ASSERT_TRUE(bh.has_value());
    EXPECT_LE(bh->uncompressed_size, codec::kMaxBlockSize);
    pos += codec::kBlockHeaderSize + bh->compressed_size;
  }
  EXPECT_EQ(blocks, 2);
  auto back = (*t)->ReadLeaf("x", (*t)->All());
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  for (int e = 0; e < kN; e += 997) {
    ASSERT_EQ(back->values<double>()[static_cast<size_t>(e)], static_cast<double>(e % 1000) * 0.25);
  }
}

}  // namespace
}  // namespace ferry::rootwrite
