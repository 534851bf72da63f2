#include "cache/page_index.h"

#include <random>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "base/endian.h"

namespace ferry::cache {
namespace {

IndexInfo Info(uint64_t size, uint32_t page_size = 4096) {
  IndexInfo i;
  i.url = "root://host:1094/data/file.root";
  i.page_size = page_size;
  i.origin_size = size;
  i.origin_mtime = 1700000123;
  i.epoch = 0x1234567890abcdefull;
  i.generation = 7;
  i.frag_bytes = 100000;
  i.created_unix = 1700000000;
  i.validated_unix = 1700000100;
  return i;
}

// Recomputes both checksums after a test edited the bytes (to reach the structural checks).
void FixChecksums(std::vector<uint8_t>& b) {
  StoreLE<uint32_t>(b.data() + 124, crc32c::Value(b.data(), 124));
  const size_t body = b.size() - 8;
  StoreLE<uint32_t>(b.data() + body, crc32c::Value(b.data(), body));
}

PageIndex Sample() {
  PageIndex idx(Info(10 * 4096 + 100));  // 11 pages, the last 100 bytes long
  idx.SetFull(0, 0xaaaa0000);
  idx.SetFull(3, 0xaaaa0003);
  idx.SetFull(10, 0xaaaa0010);  // short last page
  idx.SetFragment(5, {100, 2000, 0, 0xbbbb0005});
  idx.SetFragment(7, {0, 4000, 1900, 0xbbbb0007});
  return idx;
}

TEST(PageIndexTest, RoundTrip) {
  PageIndex idx = Sample();
  std::vector<uint8_t> bytes;
  idx.Encode(bytes);
  auto back = PageIndex::Decode(bytes);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->info().url, idx.info().url);
  EXPECT_EQ(back->info().epoch, idx.info().epoch);
  EXPECT_EQ(back->info().origin_mtime, 1700000123);
  EXPECT_EQ(back->page_count(), 11u);
  EXPECT_EQ(back->full_pages(), 3u);
  EXPECT_TRUE(back->full(0) && back->full(3) && back->full(10));
  EXPECT_FALSE(back->full(1));
  EXPECT_EQ(back->crc(3), 0xaaaa0003u);
  EXPECT_EQ(back->crc(10), 0xaaaa0010u);
  ASSERT_NE(back->fragment(7), nullptr);
  EXPECT_EQ(back->fragment(7)->offset, 1900u);
  EXPECT_EQ(back->Cover(5).lo, 100u);
  EXPECT_EQ(back->Cover(5).hi, 2000u);
  EXPECT_EQ(back->Cover(10).hi, 100u);
  EXPECT_EQ(back->held_bytes(), 2 * 4096u + 100 + 1900 + 4000);
  std::vector<uint8_t> again;
  back->Encode(again);
  EXPECT_EQ(again, bytes);
}

// Version 2 carries a fragment's in_data flag; an index with no flag is still written as
// version 1, which an older ferry reads; a flag in a version-1 index is refused.
TEST(PageIndexTest, FragmentFlagsNeedVersionTwo) {
  PageIndex idx = Sample();
  std::vector<uint8_t> v1;
  idx.Encode(v1);
  EXPECT_EQ(LoadLE<uint32_t>(v1.data() + 8), kIndexVersionNoFlags);
  Fragment f = *idx.fragment(7);
  f.in_data = true;
  f.offset = 0;  // not in the log
  idx.SetFragment(7, f);
  std::vector<uint8_t> v2;
  idx.Encode(v2);
  EXPECT_EQ(LoadLE<uint32_t>(v2.data() + 8), kIndexVersion);
  auto back = PageIndex::Decode(v2);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_TRUE(back->fragment(7)->in_data);
  EXPECT_FALSE(back->fragment(5)->in_data);
  const size_t flags_at = 128 + 32 + 8 + 16 + 32 + 28;  // the second fragment record's flags
  std::vector<uint8_t> b = v2;
  StoreLE<uint32_t>(b.data() + 8, kIndexVersionNoFlags);
  FixChecksums(b);
  EXPECT_FALSE(PageIndex::Decode(b)) << "a flag in version 1";
  b = v2;
  StoreLE<uint32_t>(b.data() + flags_at, 2);
  FixChecksums(b);
  EXPECT_FALSE(PageIndex::Decode(b)) << "an unknown flag";
  b = v2;
  StoreLE<uint64_t>(b.data() + flags_at - 12, 64);
  FixChecksums(b);
  EXPECT_FALSE(PageIndex::Decode(b)) << "a log offset for a fragment in the data file";
  b = v2;
  StoreLE<uint32_t>(b.data() + 8, 3);
  FixChecksums(b);
  EXPECT_FALSE(PageIndex::Decode(b)) << "version 3";
}

// Every change of a page clears its verified mark; a copy of the index does not carry the set.
TEST(PageIndexTest, ChangesClearVerifiedMarks) {
  PageIndex idx = Sample();
  auto v = std::make_shared<VerifiedPages>(idx.info().epoch, idx.page_count());
  idx.AttachVerified(v);
  for (uint64_t p = 0; p < idx.page_count(); ++p) {
    v->Mark(p);
  }
  EXPECT_TRUE(v->AllMarked(0, 10));
  idx.SetFull(5, 1);
  idx.SetFragment(6, {0, 10, 0, 2});
  idx.Drop(3);
  EXPECT_FALSE(v->marked(5) || v->marked(6) || v->marked(3));
  EXPECT_TRUE(v->marked(0) && v->marked(4) && v->AllMarked(7, 10));
  EXPECT_FALSE(v->AllMarked(4, 6));
  PageIndex copy(idx);
  EXPECT_EQ(copy.verified(), nullptr);
  copy.Drop(0);
  EXPECT_TRUE(v->marked(0));
  idx.Clear();
  EXPECT_FALSE(v->marked(0));
}

TEST(PageIndexTest, SetFullDropsFragmentAndDropForgets) {
  PageIndex idx = Sample();
  idx.SetFull(5, 1);
  EXPECT_EQ(idx.fragment(5), nullptr);
  EXPECT_TRUE(idx.full(5));
  idx.SetFragment(5, {0, 10, 0, 0});  // ignored: the page is full
  EXPECT_EQ(idx.fragment(5), nullptr);
  idx.Drop(5);
  idx.Drop(7);
  EXPECT_FALSE(idx.full(5));
  EXPECT_TRUE(idx.Cover(7).empty());
  EXPECT_EQ(idx.full_pages(), 3u);
}

TEST(PageIndexTest, EveryBitFlipIsDetected) {
  std::vector<uint8_t> bytes;
  Sample().Encode(bytes);
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::vector<uint8_t> b = bytes;
      b[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_FALSE(PageIndex::Decode(b)) << "flip at byte " << i << " bit " << bit;
    }
  }
}

TEST(PageIndexTest, TruncatedAndExtendedAreRejected) {
  std::vector<uint8_t> bytes;
  Sample().Encode(bytes);
  for (size_t n = 0; n < bytes.size(); n += 7) {
    EXPECT_FALSE(PageIndex::Decode(std::span(bytes).first(n))) << n;
  }
  bytes.push_back(0);
  EXPECT_FALSE(PageIndex::Decode(bytes));
}

TEST(PageIndexTest, StructuralChecksWithValidChecksums) {
  std::vector<uint8_t> good;
  Sample().Encode(good);
  const size_t bitmap_at = 128 + 32;  // url is 31 bytes -> padded to 32
  auto expect_rejected = [&](auto edit, const char* what) {
    std::vector<uint8_t> b = good;
    edit(b);
    FixChecksums(b);
    auto r = PageIndex::Decode(b);
    EXPECT_FALSE(r) << what;
    if (!r) {
      EXPECT_EQ(r.error().code(), ErrorCode::kCorruption) << what;
    }
  };
  expect_rejected([&](auto& b) { b[bitmap_at + 1] |= 0x80; }, "bit past page_count");
  expect_rejected([&](auto& b) { b[bitmap_at] |= 0x02; }, "popcount mismatch");
  expect_rejected([&](auto& b) { StoreLE<uint32_t>(b.data() + 16, 3000); }, "page size");
  expect_rejected([&](auto& b) { StoreLE<uint64_t>(b.data() + 24, 1 << 20); }, "origin size");
  expect_rejected([&](auto& b) { StoreLE<uint32_t>(b.data() + 20, 1); }, "flags");
  expect_rejected([&](auto& b) { StoreLE<uint32_t>(b.data() + 96, 3); }, "fragment count");
  const size_t frags_at = bitmap_at + 8 + 16;  // one bitmap word, 3 CRCs padded to 16
  expect_rejected([&](auto& b) { StoreLE<uint64_t>(b.data() + frags_at, 3); },
                  "fragment in a full page");
  expect_rejected([&](auto& b) { StoreLE<uint64_t>(b.data() + frags_at, 9); },
                  "fragments out of order");
  expect_rejected([&](auto& b) { StoreLE<uint32_t>(b.data() + frags_at + 12, 5000); },
                  "hi past page");
  expect_rejected([&](auto& b) { StoreLE<uint32_t>(b.data() + frags_at + 8, 2000); },
                  "empty fragment");
  expect_rejected([&](auto& b) { StoreLE<uint64_t>(b.data() + frags_at + 16, 99999); },
                  "past log end");
  // And the unedited bytes still pass after FixChecksums.
  std::vector<uint8_t> b = good;
  FixChecksums(b);
  EXPECT_TRUE(PageIndex::Decode(b));
}

// Random multi-byte edits whose checksums were recomputed (what a buggy or hostile writer of a
// shared cache could leave): each is refused as corruption, or decodes to an index that survives
// its own encoding unchanged (pages, CRCs, fragments, URL). (That any bytes at all parse without
// a crash is fuzz/page_index_fuzz's.)
TEST(PageIndexTest, ChecksummedEditsAreRefusedOrReadConsistently) {
  std::mt19937_64 rng(11);
  std::vector<uint8_t> good;
  Sample().Encode(good);
  int refused = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> b = good;
    const size_t edits = 1 + rng() % 8;
    for (size_t k = 0; k < edits; ++k) {
      b[rng() % b.size()] = static_cast<uint8_t>(rng());
    }
    FixChecksums(b);
    auto index = PageIndex::Decode(b);
    if (!index) {
      EXPECT_EQ(index.error().code(), ErrorCode::kCorruption) << index.error().ToString();
      ++refused;
      continue;
    }
    std::vector<uint8_t> again;
    index->Encode(again);
    auto back = PageIndex::Decode(again);
    ASSERT_TRUE(back) << "edit " << i << ": " << back.error().ToString();
    EXPECT_EQ(back->info().url, index->info().url) << i;
    EXPECT_EQ(back->page_count(), index->page_count()) << i;
    EXPECT_EQ(back->full_pages(), index->full_pages()) << i;
    EXPECT_EQ(back->held_bytes(), index->held_bytes()) << i;
    ASSERT_EQ(back->fragments().size(), index->fragments().size()) << i;
    for (uint64_t p = 0; p < index->page_count(); ++p) {
      EXPECT_EQ(back->Cover(p).lo, index->Cover(p).lo) << i << " page " << p;
      EXPECT_EQ(back->Cover(p).hi, index->Cover(p).hi) << i << " page " << p;
    }
  }
  EXPECT_GT(refused, 1000);  // most random edits break a structural rule
}

TEST(PageIndexTest, LargeSparseFileCostsLittleMemoryAndSpace) {
  PageIndex idx(Info(10ull << 30));  // 10 GiB, 2.6 M pages
  idx.SetFull(123456, 1);
  std::vector<uint8_t> bytes;
  idx.Encode(bytes);
  // The bitmap dominates: 1 bit per page.
  EXPECT_LT(bytes.size(), 340u * 1024);
  auto back = PageIndex::Decode(bytes);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->full(123456));
  EXPECT_EQ(back->full_pages(), 1u);
}

TEST(PageIndexTest, EmptyFile) {
  PageIndex idx(Info(0));
  std::vector<uint8_t> bytes;
  idx.Encode(bytes);
  auto back = PageIndex::Decode(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->page_count(), 0u);
  EXPECT_EQ(back->PageLength(0), 0u);
}

}  // namespace
}  // namespace ferry::cache
