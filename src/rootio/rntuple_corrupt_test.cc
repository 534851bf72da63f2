// Damaged copies of the real RNTuple files: truncated files, flipped bits in the anchor, the
// envelopes and the pages, and lying sizes. Each gives a clear error naming the structure,
// never a crash or a hang (this test also runs under ASan+UBSan).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/endian.h"
#include "base/hash.h"
#include "io/local_source.h"
#include "rootio/rntuple.h"
#include "testing/testing.h"

namespace ferry::rootio {
namespace {

#define FERRY_REQUIRE_RNTUPLE_DATA()                  \
  do {                                                \
    if (::ferry::testing::RntupleDataDir().empty()) { \
      GTEST_SKIP() << "data/rntuple not present";     \
    }                                                 \
  } while (0)

// Files small enough to damage byte by byte (all but the largest few).
std::vector<std::string> SmallFiles() {
  std::vector<std::string> out;
  for (const std::string& path : testing::AllRntupleDataFiles()) {
    if (testing::ReadWholeFile(path).size() <= 8000) {
      out.push_back(path);
    }
  }
  return out;
}

// Opens every RNTuple of the bytes and reads every top-level field (the last 1000 entries at
// most): the values as JSON, or the first error.
Result<std::string> OpenAndReadAll(std::vector<uint8_t> bytes) {
  io::MemorySource src(std::move(bytes), "damaged.root");
  auto f = FERRY_TRY(RootFile::Open(src));
  std::string out;
  for (const std::string& name : FERRY_TRY(RntupleNames(*f))) {
    auto r = FERRY_TRY(Rntuple::Open(*f, name));
    uint64_t first = r->entries() > 1000 ? r->entries() - 1000 : 0;
    for (uint32_t id : r->TopLevelFields()) {
      auto v = FERRY_TRY(r->Read(id, first, r->entries() - first));
      out += RntupleValue::List(std::move(v)).ToJson() + "\n";
    }
  }
  return out;
}

// Where an intact file keeps its RNTuple structures.
struct Layout {
  uint64_t anchor = 0;  // the anchor object's payload
  std::vector<Locator> envelopes;
  std::vector<std::string> envelope_names;  // as errors name them
  std::vector<uint64_t> envelope_lengths;   // uncompressed
  std::vector<PageInfo> pages;
  uint64_t end = 0;  // one past the last byte an RNTuple structure uses
};

Layout LayoutOf(const std::string& path) {
  Layout l;
  auto f = RootFile::OpenPath(path);
  EXPECT_TRUE(f.has_value());
  auto found = FindRntuples(**f);
  EXPECT_TRUE(found.has_value());
  for (const RntupleEntry& e : *found) {
    l.anchor = e.key.seek_key + e.key.keylen;
    auto r = Rntuple::Open(**f, e.path);
    EXPECT_TRUE(r.has_value());
    const Anchor& a = (*r)->anchor();
    l.envelopes.push_back({a.seek_header, a.nbytes_header});
    l.envelope_lengths.push_back(a.len_header);
    l.envelope_names.push_back("'" + e.path + "' header envelope");
    l.envelopes.push_back({a.seek_footer, a.nbytes_footer});
    l.envelope_lengths.push_back(a.len_footer);
    l.envelope_names.push_back("'" + e.path + "' footer envelope");
    for (size_t g = 0; g < (*r)->footer().groups.size(); ++g) {
      l.envelopes.push_back((*r)->footer().groups[g].page_list.locator);
      l.envelope_lengths.push_back((*r)->footer().groups[g].page_list.length);
      l.envelope_names.push_back("'" + e.path + "' page list envelope " + std::to_string(g));
    }
    l.end = std::max(l.end, e.key.seek_key + static_cast<uint64_t>(e.key.nbytes));
    for (const ClusterInfo& c : (*r)->clusters()) {
      for (const ColumnPages& col : c.columns) {
        for (const PageInfo& p : col.pages) {
          l.pages.push_back(p);
          l.end = std::max(l.end, p.locator.offset + p.locator.size + (p.has_checksum ? 8 : 0));
        }
      }
    }
  }
  for (const Locator& loc : l.envelopes) {
    l.end = std::max(l.end, loc.offset + loc.size);
  }
  return l;
}

std::vector<uint8_t> Flipped(std::vector<uint8_t> bytes, uint64_t byte, int bit) {
  bytes[byte] ^= static_cast<uint8_t>(1u << bit);
  return bytes;
}

TEST(RntupleCorrupt, TruncatedFilesGiveErrors) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  for (const std::string& path : SmallFiles()) {
    SCOPED_TRACE(path);
    auto bytes = testing::ReadWholeFile(path);
    Layout l = LayoutOf(path);
    ASSERT_LE(l.end, bytes.size());
    std::vector<uint64_t> cuts;
    for (uint64_t cut = 0; cut < l.end; cut += std::max<uint64_t>(1, l.end / 97)) {
      cuts.push_back(cut);
    }
    for (const PageInfo& p : l.pages) {
      cuts.push_back(p.locator.offset + p.locator.size / 2);
    }
    for (const Locator& e : l.envelopes) {
      cuts.push_back(e.offset + e.size - 1);
    }
    for (uint64_t cut : cuts) {
      std::vector<uint8_t> head(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(cut));
      auto s = OpenAndReadAll(std::move(head));
      EXPECT_FALSE(s.has_value()) << "cut at " << cut;
    }
  }
}

TEST(RntupleCorrupt, FlippedAnchorBitsAreChecksumErrors) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  for (const std::string& path : SmallFiles()) {
    SCOPED_TRACE(path);
    auto bytes = testing::ReadWholeFile(path);
    Layout l = LayoutOf(path);
    // Every byte the checksum covers, and the checksum itself.
    for (uint64_t at = l.anchor + AnchorLayout::kChecksummedBegin;
         at < l.anchor + AnchorLayout::kMinSize; at += 5) {
      auto s = OpenAndReadAll(Flipped(bytes, at, static_cast<int>(at % 8)));
      ASSERT_FALSE(s.has_value()) << at;
      EXPECT_EQ(s.error().code(), ErrorCode::kCorruption);
      EXPECT_NE(s.error().ToString().find("' anchor: checksum mismatch"), std::string::npos)
          << s.error().ToString();
    }
  }
}

TEST(RntupleCorrupt, FlippedEnvelopeBitsAreCaught) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  for (const std::string& path : SmallFiles()) {
    SCOPED_TRACE(path);
    auto bytes = testing::ReadWholeFile(path);
    auto intact = OpenAndReadAll(bytes);
    ASSERT_TRUE(intact.has_value());
    Layout l = LayoutOf(path);
    for (size_t k = 0; k < l.envelopes.size(); ++k) {
      const Locator& e = l.envelopes[k];
      for (uint64_t at = e.offset; at < e.offset + e.size;
           at += std::max<uint64_t>(1, e.size / 23)) {
        auto s = OpenAndReadAll(Flipped(bytes, at, static_cast<int>(at % 8)));
        if (s.has_value()) {
          // A bit the codec ignores (compressed envelopes only): the envelope's checksum then
          // proves the decompressed bytes intact, and so are the values.
          EXPECT_NE(e.size, l.envelope_lengths[k]) << "an uncompressed envelope changed silently";
          EXPECT_EQ(*s, *intact) << l.envelope_names[k] << " byte " << at - e.offset;
          continue;
        }
        EXPECT_EQ(s.error().code(), ErrorCode::kCorruption) << s.error().ToString();
        EXPECT_NE(s.error().ToString().find(l.envelope_names[k]), std::string::npos)
            << s.error().ToString();
      }
    }
  }
}

TEST(RntupleCorrupt, FlippedPageBitsAreChecksumErrors) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  size_t pages = 0;
  for (const std::string& path : SmallFiles()) {
    SCOPED_TRACE(path);
    // Its 191 pages are read only in part by OpenAndReadAll (100,000,000 entries).
    if (path.find("int_multicluster") != std::string::npos) {
      continue;
    }
    auto bytes = testing::ReadWholeFile(path);
    Layout l = LayoutOf(path);
    for (const PageInfo& p : l.pages) {
      ASSERT_TRUE(p.has_checksum);  // ROOT 6.34 checksums every page
      // A bit of the page, and one of the checksum after it.
      for (uint64_t at :
           {p.locator.offset + p.locator.size / 3, p.locator.offset + p.locator.size}) {
        auto s = OpenAndReadAll(Flipped(bytes, at, 3));
        ASSERT_FALSE(s.has_value()) << at;
        EXPECT_EQ(s.error().code(), ErrorCode::kCorruption);
        EXPECT_NE(s.error().ToString().find("page checksum mismatch"), std::string::npos)
            << s.error().ToString();
      }
      ++pages;
    }
  }
  EXPECT_GT(pages, 50u);
}

// Rewrites one u64 field of the anchor (big-endian) and its checksum, as a writer that lies
// about sizes would.
std::vector<uint8_t> WithAnchorField(std::vector<uint8_t> bytes,
                                     uint64_t anchor,
                                     size_t field,
                                     uint64_t value) {
  size_t at =
      anchor + AnchorLayout::kChecksummedBegin + 2 * AnchorLayout::kVersionFields + 8 * field;
  StoreBE<uint64_t>(bytes.data() + at, value);
  size_t sum_at = anchor + AnchorLayout::kMinSize - AnchorLayout::kChecksumSize;
  uint64_t sum = hash::Xxh3(bytes.data() + anchor + AnchorLayout::kChecksummedBegin,
                            sum_at - anchor - AnchorLayout::kChecksummedBegin);
  StoreBE<uint64_t>(bytes.data() + sum_at, sum);
  return bytes;
}

TEST(RntupleCorrupt, LyingEnvelopeSizesAreErrors) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  const std::string path = testing::RntupleDataFile("test_int_float_rntuple_v1-0-0-0.root");
  auto bytes = testing::ReadWholeFile(path);
  Layout l = LayoutOf(path);
  auto f = RootFile::OpenPath(path);
  ASSERT_TRUE(f.has_value());
  auto r = Rntuple::Open(**f, "ntuple");
  ASSERT_TRUE(r.has_value());
  const Anchor& a = (*r)->anchor();
  struct Case {
    size_t field;  // 0 seek header, 1 nbytes header, 2 len header, 3.. the footer's
    uint64_t value;
    const char* names;
  };
  for (const Case& c :
       {Case{1, a.nbytes_header - 1, "header envelope"},
        Case{2, a.len_header + 1, "header envelope"}, Case{2, uint64_t{1} << 40, "header envelope"},
        Case{0, a.seek_header + 1, "header envelope"},
        Case{4, a.nbytes_footer + 1, "footer envelope"},
        Case{3, bytes.size() - 4, "footer envelope"},
        Case{4, uint64_t{1} << 62, "footer envelope"}}) {
    auto s = OpenAndReadAll(WithAnchorField(bytes, l.anchor, c.field, c.value));
    ASSERT_FALSE(s.has_value()) << c.field << " = " << c.value;
    EXPECT_EQ(s.error().code(), ErrorCode::kCorruption) << s.error().ToString();
    EXPECT_NE(s.error().ToString().find(c.names), std::string::npos) << s.error().ToString();
  }
  // A max key size smaller than the header splits it into keys that do not exist.
  auto s = OpenAndReadAll(WithAnchorField(bytes, l.anchor, 6, 64));
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), ErrorCode::kCorruption) << s.error().ToString();
}

// Random single-bit flips anywhere: an error or values, never a crash.
TEST(RntupleCorrupt, RandomFlipsNeverCrash) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  for (const std::string& path : SmallFiles()) {
    auto bytes = testing::ReadWholeFile(path);
    auto noise = testing::PseudoRandomBytes(400, bytes.size());
    for (size_t k = 0; k + 4 <= noise.size(); k += 4) {
      uint64_t at = LoadLE<uint32_t>(noise.data() + k) % bytes.size();
      (void)OpenAndReadAll(Flipped(bytes, at, noise[k] % 8));
    }
  }
}

}  // namespace
}  // namespace ferry::rootio
