// Relocation (the replica tier's ROOT side) against every real file of data/root:
// the virtual file with baskets re-encoded and moved reads to exactly the original values.
#include "replica/relocate.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/endian.h"
#include "io/local_source.h"
#include "replica/overlay_writer.h"
#include "rootio/file_header.h"
#include "rootio/root_file.h"
#include "testing/testing.h"

namespace ferry::replica {
namespace {

struct Read {
  std::map<std::string, rootio::Column> columns;       // "tree/leaf"
  std::map<std::string, std::vector<uint64_t>> seeks;  // "tree/branch" -> basket seeks
};

Read ReadEverything(const std::vector<uint8_t>& bytes) {
  Read out;
  io::MemorySource src(bytes);
  auto f = rootio::RootFile::Open(src);
  EXPECT_TRUE(f.has_value()) << f.error().ToString();
  if (!f) {
    return out;
  }
  auto paths = (*f)->TreePaths();
  EXPECT_TRUE(paths.has_value());
  for (const std::string& p : paths.value_or(std::vector<std::string>{})) {
    auto t = (*f)->OpenTree(p);
    EXPECT_TRUE(t.has_value()) << p << ": " << t.error().ToString();
    if (!t) {
      continue;
    }
    const rootio::TreeInfo& info = (*t)->info();
    for (const rootio::Branch& b : info.branches) {
      for (const rootio::BasketRef& r : b.baskets) {
        out.seeks[p + "/" + b.name].push_back(r.seek);
      }
    }
    for (size_t li = 0; li < info.leaves.size(); ++li) {
      if (!(*t)->CheckReadable(static_cast<int32_t>(li))) {
        continue;
      }
      auto c = (*t)->ReadLeaf(static_cast<int32_t>(li), (*t)->All());
      EXPECT_TRUE(c.has_value()) << p << "/" << info.leaves[li].name << ": "
                                 << c.error().ToString();
      if (c) {
        out.columns[p + "/" + info.leaves[li].name] = std::move(*c);
      }
    }
  }
  return out;
}

void ExpectSameValues(const Read& a, const Read& b, const std::string& what) {
  ASSERT_EQ(a.columns.size(), b.columns.size()) << what;
  for (const auto& [name, col] : a.columns) {
    auto it = b.columns.find(name);
    ASSERT_NE(it, b.columns.end()) << what << ": " << name;
    const rootio::Column& other = it->second;
    EXPECT_EQ(col.type, other.type) << what << ": " << name;
    EXPECT_EQ(col.num_entries, other.num_entries) << what << ": " << name;
    EXPECT_EQ(col.offsets, other.offsets) << what << ": " << name;
    EXPECT_TRUE(col.bytes == other.bytes) << what << ": values of " << name << " differ";
  }
}

std::vector<std::string> FilesWithTrees() {
  std::vector<std::string> out;
  for (const std::string& path : testing::AllRootDataFiles()) {
    auto f = rootio::RootFile::OpenPath(path);
    if (f && f.value()->TreePaths().has_value() && !f.value()->TreePaths()->empty()) {
      out.push_back(path);
    }
  }
  return out;
}

TEST(Relocate, EveryBasketOfEveryRealFileMovesAndReadsTheSame) {
  FERRY_REQUIRE_ROOT_DATA();
  const auto files = FilesWithTrees();
  ASSERT_FALSE(files.empty());
  for (const std::string& path : files) {
    const std::vector<uint8_t> original = testing::ReadWholeFile(path);
    const Read want = ReadEverything(original);
    for (const char* codec : {"zstd:3", "lz4", "none"}) {
      const std::string what = path + " with " + codec;
      auto virt = RelocateInMemory(original, codec::Setting::Parse(codec).value());
      ASSERT_TRUE(virt.has_value()) << what << ": " << virt.error().ToString();
      const Read got = ReadEverything(*virt);
      ExpectSameValues(want, got, what);
      // Every basket that had a record of its own now lives in the overlay.
      for (const auto& [branch, seeks] : got.seeks) {
        for (uint64_t s : seeks) {
          EXPECT_TRUE(s == 0 || s >= original.size()) << what << ": " << branch;
        }
      }
      // fEND is the virtual size.
      auto h = rootio::ParseFileHeader(*virt, virt->size());
      ASSERT_TRUE(h.has_value());
      EXPECT_EQ(h->end, virt->size()) << what;
    }
  }
}

TEST(Relocate, PartOfTheBranchesMovedReadsTheSame) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::vector<uint8_t> original =
      testing::ReadWholeFile(testing::RootDataFile("nano_dy.root"));  // baskets of their own
  const Read want = ReadEverything(original);
  size_t n = 0;
  auto virt = RelocateInMemory(original, codec::Setting::Parse("zstd:1").value(),
                               [&](const std::string&, const std::string&) {
                                 return (n++ % 3) == 0;  // every third branch
                               });
  ASSERT_TRUE(virt.has_value()) << virt.error().ToString();
  const Read got = ReadEverything(*virt);
  ExpectSameValues(want, got, "a third of the branches moved");
  size_t moved = 0;
  size_t kept = 0;
  for (const auto& [branch, seeks] : got.seeks) {
    for (uint64_t s : seeks) {
      (s >= original.size() ? moved : kept) += s != 0 ? 1 : 0;
    }
  }
  EXPECT_GT(moved, 0u);
  EXPECT_GT(kept, moved);
}

TEST(Relocate, HeaderTakesTheBigFormPastTwoGigabytes) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::vector<uint8_t> original =
      testing::ReadWholeFile(testing::RootDataFile("uproot-HZZ-zlib.root"));
  auto before = rootio::ParseFileHeader(original, original.size());
  ASSERT_TRUE(before.has_value());
  ASSERT_FALSE(before->big);
  const uint64_t end = 5'000'000'000ull;
  auto patch = HeaderPatch(std::span(original).first(100), end);
  ASSERT_TRUE(patch.has_value()) << patch.error().ToString();
  std::vector<uint8_t> head(original.begin(), original.begin() + 100);
  std::copy(patch->bytes.begin(), patch->bytes.end(), head.begin());
  auto after = rootio::ParseFileHeader(head, end);
  ASSERT_TRUE(after.has_value()) << after.error().ToString();
  EXPECT_TRUE(after->big);
  EXPECT_EQ(after->end, end);
  EXPECT_EQ(after->version, before->version);
  EXPECT_EQ(after->begin, before->begin);
  EXPECT_EQ(after->seek_free, before->seek_free);
  EXPECT_EQ(after->nbytes_free, before->nbytes_free);
  EXPECT_EQ(after->nbytes_name, before->nbytes_name);
  EXPECT_EQ(after->compress, before->compress);
  EXPECT_EQ(after->seek_info, before->seek_info);
  EXPECT_EQ(after->nbytes_info, before->nbytes_info);
  EXPECT_EQ(after->units, 8);
  // Small form below the threshold: only fEND changes.
  auto small = HeaderPatch(std::span(original).first(100), 123456);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(LoadBE<uint32_t>(small->bytes.data() + 12), 123456u);
  EXPECT_TRUE(std::equal(small->bytes.begin() + 16, small->bytes.end(), original.begin() + 16));
}

TEST(Relocate, ATreeKeyWithSmallSeeksCannotPointPastTwoGigabytes) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::vector<uint8_t> original =
      testing::ReadWholeFile(testing::RootDataFile("uproot-HZZ-zlib.root"));
  io::MemorySource src(original);
  auto f = rootio::RootFile::Open(src);
  ASSERT_TRUE(f.has_value());
  auto key = (*f)->FindKey("events");
  ASSERT_TRUE(key.has_value());
  ASSERT_LT(key->version, 1000) << "the test needs a key with 32-bit seeks";
  auto tree = (*f)->OpenTree("events");
  ASSERT_TRUE(tree.has_value());
  std::vector<uint8_t> record(
      original.begin() + static_cast<ptrdiff_t>(key->seek_key),
      original.begin() + static_cast<ptrdiff_t>(key->seek_key) + key->nbytes);
  auto list = (*f)->ReadKeysListOf("");
  ASSERT_TRUE(list.has_value());
  uint64_t at = 0;
  for (size_t i = 0; i < list->keys.size(); ++i) {
    if (list->keys[i].seek_key == key->seek_key) {
      at = list->offsets[i];
    }
  }
  ASSERT_NE(at, 0u);
  auto entry = std::span(original).subspan(at, 40);
  auto r = RelocateTree(record, (*tree)->info(), {}, 3'000'000'000ull,
                        codec::Setting::Parse("zstd:1").value(), at, entry);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  auto ok = RelocateTree(record, (*tree)->info(), {}, 1'000'000'000ull,
                         codec::Setting::Parse("zstd:1").value(), at, entry);
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_EQ(LoadBE<uint32_t>(ok->key_entry.bytes.data() + 18), 1'000'000'000u);
  EXPECT_EQ(LoadBE<int32_t>(ok->key_entry.bytes.data()), static_cast<int32_t>(ok->record.size()));
}

TEST(Relocate, ReencodedBasketKeepsItsKeyHeader) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::vector<uint8_t> original =
      testing::ReadWholeFile(testing::RootDataFile("uproot-HZZ-lzma.root"));
  io::MemorySource src(original);
  auto f = rootio::RootFile::Open(src);
  ASSERT_TRUE(f.has_value());
  auto tree = (*f)->OpenTree("events");
  ASSERT_TRUE(tree.has_value());
  const rootio::BasketRef& ref = (*tree)->info().branches[0].baskets[0];
  ASSERT_GT(ref.seek, 0u);
  std::span<const uint8_t> record = std::span(original).subspan(ref.seek, ref.bytes);
  ByteVector scratch;
  ByteVector out;
  out.push_back(0xAB);  // appends, never overwrites
  auto size = ReencodeBasket(record, codec::Setting::Parse("lz4").value(), 777, &scratch, &out);
  ASSERT_TRUE(size.has_value()) << size.error().ToString();
  EXPECT_EQ(out.size(), 1 + *size);
  EXPECT_EQ(out[0], 0xAB);
  const auto keylen = LoadBE<uint16_t>(record.data() + 14);
  // fNbytes changes; fVersion, fObjlen, fDatime, fKeylen, fCycle stay.
  EXPECT_EQ(LoadBE<int32_t>(out.data() + 1), static_cast<int32_t>(*size));
  EXPECT_TRUE(std::equal(record.begin() + 4, record.begin() + 18, out.begin() + 5));
  // ...and everything after fSeekKey/fSeekPdir in the key (names, basket fields).
  const size_t seeks = LoadBE<int16_t>(record.data() + 4) > 1000 ? 16 : 8;
  EXPECT_TRUE(std::equal(record.begin() + 18 + static_cast<ptrdiff_t>(seeks),
                         record.begin() + keylen,
                         out.begin() + 19 + static_cast<ptrdiff_t>(seeks)));
  // The payload is LZ4 now.
  EXPECT_EQ(out[1 + keylen], 'L');
  EXPECT_EQ(out[2 + keylen], '4');
  // A corrupt record is an error, not a crash.
  std::vector<uint8_t> bad(record.begin(), record.end());
  bad[keylen + 12] ^= 0xFF;
  EXPECT_FALSE(
      ReencodeBasket(bad, codec::Setting::Parse("lz4").value(), 777, &scratch, &out).has_value());
}

}  // namespace
}  // namespace ferry::replica
