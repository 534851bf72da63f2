// An RNTuple built here byte by byte, for what no file of data/rntuple holds: std::optional
// fields, a field stored through the ROOT streamer, zlib, LZMA and LZ4 pages, a large locator,
// blobs split across keys by a small max key size. The blobs are appended to a real file whose
// anchor is rewritten to point at them (the reader finds blobs only through locators).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "codec/compression.h"
#include "io/local_source.h"
#include "rootio/rntuple.h"
#include "rootio/rntuple_test_bytes.h"
#include "testing/testing.h"

namespace ferry::rootio {
namespace {

using namespace testbytes;  // NOLINT(google-build-using-namespace): test helpers

constexpr uint64_t kEntries = 300;
constexpr uint64_t kMaxKeySize = 200;  // splits every blob larger than this

// A file image that blobs are appended to.
struct Image {
  std::vector<uint8_t> file;

  // Appends a blob, split over keys of kMaxKeySize when larger: the first key holds the start
  // of the blob and the offsets of the others (the smallest count k with
  // k * kMaxKeySize >= size + 8 (k - 1)). Returns where the blob starts.
  uint64_t Blob(const std::vector<uint8_t>& bytes) {
    uint64_t at = file.size();
    if (bytes.size() <= kMaxKeySize) {
      file.insert(file.end(), bytes.begin(), bytes.end());
      return at;
    }
    uint64_t keys = 2;
    while (keys * kMaxKeySize < bytes.size() + 8 * (keys - 1)) {
      ++keys;
    }
    uint64_t head = kMaxKeySize - 8 * (keys - 1);
    file.insert(file.end(), bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(head));
    size_t table = file.size();
    file.resize(table + 8 * (keys - 1));
    for (uint64_t k = 1, done = head; k < keys; ++k) {
      file.push_back(0);  // as if a key header separated them
      StoreLE<uint64_t>(file.data() + table + 8 * (k - 1), file.size());
      uint64_t n = std::min<uint64_t>(kMaxKeySize, bytes.size() - done);
      file.insert(file.end(), bytes.begin() + static_cast<ptrdiff_t>(done),
                  bytes.begin() + static_cast<ptrdiff_t>(done + n));
      done += n;
    }
    return at;
  }
};

std::vector<uint8_t> Compressed(codec::Algorithm a, const std::vector<uint8_t>& raw) {
  if (a == codec::Algorithm::kNone) {
    return raw;
  }
  ByteVector out;
  auto shrank = codec::CompressPayload({a, 6}, raw, &out);
  EXPECT_TRUE(shrank.has_value() && *shrank) << codec::AlgorithmName(a);
  return {out.begin(), out.end()};
}

std::vector<uint8_t> Field(uint32_t parent,
                           uint16_t role,
                           const std::string& name,
                           const std::string& type) {
  return RecordFrame(Bytes()
                         .Put<uint32_t>(0)
                         .Put<uint32_t>(0)
                         .Put<uint32_t>(parent)
                         .Put<uint16_t>(role)
                         .Put<uint16_t>(0)
                         .Str(name)
                         .Str(type)
                         .Str("")
                         .Str("")
                         .b);
}

// A std::array<E, size> of an empty record E: a repetitive leaf over a record without columns.
std::vector<uint8_t> HugeArray(uint32_t id, uint64_t size) {
  return RecordFrame(Bytes()
                         .Put<uint32_t>(0)
                         .Put<uint32_t>(0)
                         .Put<uint32_t>(id)
                         .Put<uint16_t>(0)
                         .Put<uint16_t>(FieldFlags::kRepetitive)
                         .Str("huge")
                         .Str("std::array<E," + std::to_string(size) + ">")
                         .Str("")
                         .Str("")
                         .Put<uint64_t>(size)
                         .b);
}

// A column deferred to an element far past anything written, absent from every cluster.
std::vector<uint8_t> DeferredColumn(uint32_t field, int64_t first_element) {
  return RecordFrame(Bytes()
                         .Put<uint16_t>(static_cast<uint16_t>(ColumnType::kInt32))
                         .Put<uint16_t>(32)
                         .Put<uint32_t>(field)
                         .Put<uint16_t>(ColumnFlags::kDeferred)
                         .Put<uint16_t>(0)
                         .Put<int64_t>(first_element)
                         .b);
}

std::vector<uint8_t> Column(ColumnType type, uint16_t bits, uint32_t field) {
  return RecordFrame(Bytes()
                         .Put<uint16_t>(static_cast<uint16_t>(type))
                         .Put<uint16_t>(bits)
                         .Put<uint32_t>(field)
                         .Put<uint16_t>(0)
                         .Put<uint16_t>(0)
                         .b);
}

struct Page {
  std::vector<uint8_t> raw;
  uint32_t elements = 0;
  codec::Algorithm codec = codec::Algorithm::kNone;
  bool large_locator = false;
};

// Element values of the synthetic RNTuple: opt = e for even entries, empty for odd ones;
// blob (a streamer field) one byte per entry; u = UINT64_MAX - e, byte-split.
std::vector<Page> Pages() {
  Bytes index;
  Bytes values;
  Bytes blob_index;
  Bytes blob;
  Bytes u;
  uint64_t items = 0;
  for (uint64_t e = 0; e < kEntries; ++e) {
    if (e % 2 == 0) {
      values.Put<int32_t>(static_cast<int32_t>(e));
      ++items;
    }
    index.Put<uint64_t>(items);
    blob_index.Put<uint64_t>(e + 1);
    blob.Put<uint8_t>(static_cast<uint8_t>(e % 3));
    u.Put<uint64_t>(UINT64_MAX - e);
  }
  std::vector<uint8_t> split(u.b.size());
  for (size_t i = 0; i < kEntries; ++i) {
    for (size_t b = 0; b < 8; ++b) {
      split[b * kEntries + i] = u.b[i * 8 + b];
    }
  }
  return {{index.b, kEntries, codec::Algorithm::kZlib},
          {values.b, static_cast<uint32_t>(items), codec::Algorithm::kNone},
          {blob_index.b, kEntries, codec::Algorithm::kLzma},
          {blob.b, kEntries, codec::Algorithm::kNone},
          {split, kEntries, codec::Algorithm::kLz4, /*large_locator=*/true}};
}

std::vector<uint8_t> HeaderPayload() {
  std::vector<uint8_t> fields;
  for (const auto& f : {Field(0, 1, "opt", "std::optional<std::int32_t>"),
                        Field(0, 0, "_0", "std::int32_t"), Field(2, 4, "obj", "TObjString"),
                        Field(3, 0, "u", "std::uint64_t"), HugeArray(4, uint64_t{1} << 40),
                        Field(4, 2, "_0", "E"), Field(6, 0, "late", "std::int32_t")}) {
    fields.insert(fields.end(), f.begin(), f.end());
  }
  std::vector<uint8_t> columns;
  for (const auto& c :
       {Column(ColumnType::kIndex64, 64, 0), Column(ColumnType::kInt32, 32, 1),
        Column(ColumnType::kIndex64, 64, 2), Column(ColumnType::kByte, 8, 2),
        Column(ColumnType::kSplitUInt64, 64, 3), DeferredColumn(6, int64_t{1} << 40)}) {
    columns.insert(columns.end(), c.begin(), c.end());
  }
  return Bytes()
      .Put<uint64_t>(0)
      .Str("ntuple")
      .Str("built by hand")
      .Str("ferry rntuple_synthetic_test")
      .Append(ListFrame(7, fields))
      .Append(ListFrame(6, columns))
      .Append(ListFrame(0, {}))
      .Append(ListFrame(0, {}))
      .b;
}

std::vector<uint8_t> Locator(uint64_t offset, uint64_t size, bool large) {
  if (!large) {
    return Bytes().Put<int32_t>(static_cast<int32_t>(size)).Put<uint64_t>(offset).b;
  }
  return Bytes().Put<int32_t>(-(20 | (1 << 24))).Put<uint64_t>(size).Put<uint64_t>(offset).b;
}

// Writes the pages (each followed by its XXH3) and returns the page list's column frames.
std::vector<uint8_t> WritePages(Image& image, std::vector<uint64_t>* page_offsets) {
  std::vector<uint8_t> columns;
  for (const Page& p : Pages()) {
    std::vector<uint8_t> stored = Compressed(p.codec, p.raw);
    Bytes blob;
    blob.Append(stored).Put<uint64_t>(hash::Xxh3(stored.data(), stored.size()));
    uint64_t at = image.Blob(blob.b);
    page_offsets->push_back(at);
    std::vector<uint8_t> item = Bytes()
                                    .Put<int32_t>(-static_cast<int32_t>(p.elements))
                                    .Append(Locator(at, stored.size(), p.large_locator))
                                    .b;
    uint32_t setting =
        p.codec == codec::Algorithm::kNone ? 0 : 100 * static_cast<uint32_t>(p.codec) + 6;
    auto column = ListFrame(1, Bytes().Append(item).Put<int64_t>(0).Put<uint32_t>(setting).b);
    columns.insert(columns.end(), column.begin(), column.end());
  }
  return columns;
}

// The test file: a real RNTuple file whose anchor now points at the synthetic envelopes.
struct Built {
  std::vector<uint8_t> file;
  std::vector<uint64_t> page_offsets;
};

Built Build() {
  const std::string path = testing::RntupleDataFile("test_int_float_rntuple_v1-0-0-0.root");
  Image image{testing::ReadWholeFile(path)};
  Built out;
  std::vector<uint8_t> header = MakeEnvelope(1, HeaderPayload());
  uint64_t header_at = image.Blob(header);
  uint64_t header_sum = LoadLE<uint64_t>(header.data() + header.size() - 8);
  std::vector<uint8_t> columns = WritePages(image, &out.page_offsets);
  std::vector<uint8_t> summary = RecordFrame(Bytes().Put<uint64_t>(0).Put<uint64_t>(kEntries).b);
  std::vector<uint8_t> page_list = MakeEnvelope(3, Bytes()
                                                       .Put<uint64_t>(header_sum)
                                                       .Append(ListFrame(1, summary))
                                                       .Append(ListFrame(1, ListFrame(5, columns)))
                                                       .b);
  uint64_t list_at = image.Blob(page_list);
  std::vector<uint8_t> group = RecordFrame(Bytes()
                                               .Put<uint64_t>(0)
                                               .Put<uint64_t>(kEntries)
                                               .Put<uint32_t>(1)
                                               .Put<uint64_t>(page_list.size())
                                               .Append(Locator(list_at, page_list.size(), false))
                                               .b);
  std::vector<uint8_t> footer = MakeEnvelope(2, Bytes()
                                                    .Put<uint64_t>(0)
                                                    .Put<uint64_t>(header_sum)
                                                    .Append(RecordFrame({}))
                                                    .Append(ListFrame(1, group))
                                                    .b);
  std::vector<uint8_t> footer_stored = Compressed(codec::Algorithm::kZstd, footer);
  uint64_t footer_at = image.Blob(footer_stored);

  // The anchor (big-endian): the first RNTuple key's payload.
  auto f = RootFile::OpenPath(path);
  EXPECT_TRUE(f.has_value());
  auto found = FindRntuples(**f);
  EXPECT_TRUE(found.has_value() && !found->empty());
  size_t anchor = (*found)[0].key.seek_key + (*found)[0].key.keylen;
  size_t at = anchor + AnchorLayout::kChecksummedBegin + 2 * AnchorLayout::kVersionFields;
  for (uint64_t v : {header_at, uint64_t{header.size()}, uint64_t{header.size()}, footer_at,
                     uint64_t{footer_stored.size()}, uint64_t{footer.size()}, kMaxKeySize}) {
    StoreBE<uint64_t>(image.file.data() + at, v);
    at += 8;
  }
  StoreBE<uint64_t>(image.file.data() + at,
                    hash::Xxh3(image.file.data() + anchor + AnchorLayout::kChecksummedBegin,
                               at - anchor - AnchorLayout::kChecksummedBegin));
  out.file = std::move(image.file);
  return out;
}

#define FERRY_REQUIRE_RNTUPLE_DATA()                  \
  do {                                                \
    if (::ferry::testing::RntupleDataDir().empty()) { \
      GTEST_SKIP() << "data/rntuple not present";     \
    }                                                 \
  } while (0)

TEST(RntupleSynthetic, OptionalsStreamerFieldsCodecsLargeLocatorsAndSplitBlobs) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Built built = Build();
  io::MemorySource src(built.file, "synthetic.root");
  auto f = RootFile::Open(src);
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  auto r = Rntuple::Open(**f, "ntuple");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ((*r)->entries(), kEntries);
  EXPECT_EQ((*r)->header().writer, "ferry rntuple_synthetic_test");
  EXPECT_EQ((*r)->anchor().max_key_size, kMaxKeySize);
  // The header, the page list and some pages span several keys.
  EXPECT_GT((*r)->anchor().len_header, kMaxKeySize);
  EXPECT_GT((*r)->footer().groups[0].page_list.length, kMaxKeySize);

  auto opt = (*r)->Read(0, 0, kEntries);
  ASSERT_TRUE(opt.has_value()) << opt.error().ToString();
  for (uint64_t e = 0; e < kEntries; ++e) {
    const RntupleValue& v = (*opt)[e];
    if (e % 2 == 0) {
      ASSERT_EQ(v.kind, RntupleValue::Kind::kInt) << e;
      EXPECT_EQ(v.i, static_cast<int64_t>(e));
    } else {
      EXPECT_EQ(v.kind, RntupleValue::Kind::kNull) << e;
    }
  }
  auto u = (*r)->Read(3, 0, kEntries);
  ASSERT_TRUE(u.has_value()) << u.error().ToString();
  for (uint64_t e = 0; e < kEntries; ++e) {
    EXPECT_EQ((*u)[e].u, UINT64_MAX - e);
  }
  auto obj = (*r)->Read(2, 0, 1);
  ASSERT_FALSE(obj.has_value());
  EXPECT_EQ(obj.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(obj.error().message(),
            "RNTuple 'ntuple' field 'obj': objects serialized by the ROOT streamer are not "
            "decoded");
  // Sizes that are only numbers on disk: an array of 2^40 empty records per entry is refused
  // before anything is allocated; a column deferred past every cluster reads as zeros.
  auto huge = (*r)->Read(4, 0, 2);
  ASSERT_FALSE(huge.has_value());
  EXPECT_EQ(huge.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(huge.error().message().find("field 'huge._0'"), std::string::npos)
      << huge.error().message();
  auto late = (*r)->Read(6, 0, kEntries);
  ASSERT_TRUE(late.has_value()) << late.error().ToString();
  EXPECT_EQ(late->back().kind, RntupleValue::Kind::kInt);
  EXPECT_EQ(late->back().i, 0);
  // The public limit: batches of at most kMaxValuesPerRead entries.
  auto many = (*r)->Read(3, 0, Rntuple::kMaxValuesPerRead + 1);
  ASSERT_FALSE(many.has_value());
  EXPECT_EQ(many.error().code(), ErrorCode::kInvalidArgument);
  // A subfield of an optional, per entry.
  auto item = (*r)->Read(1, 0, 3);
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(RntupleValue::List(std::move(*item)).ToJson(), "[0,null,2]");
}

TEST(RntupleSynthetic, DamageInASplitLargeLocatorPageIsCaught) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Built built = Build();
  built.file[built.page_offsets[4] + 5] ^= 0x40;  // inside the LZ4 page of u
  io::MemorySource src(built.file, "synthetic.root");
  auto f = RootFile::Open(src);
  ASSERT_TRUE(f.has_value());
  auto r = Rntuple::Open(**f, "ntuple");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE((*r)->Read(0, 0, kEntries).has_value());
  auto u = (*r)->Read(3, 0, kEntries);
  ASSERT_FALSE(u.has_value());
  EXPECT_EQ(u.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(u.error().message().find("field 'u' column 4 cluster 0 page 0: page checksum mismatch"),
            std::string::npos)
      << u.error().message();
}

}  // namespace
}  // namespace ferry::rootio
