// The RNTuple primitives over bytes built here by hand from the format specification: frames,
// locators, feature flags, envelopes, blobs split across keys, every codec and every column
// encoding (including those no file in data/rntuple uses).
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/endian.h"
#include "base/hash.h"
#include "codec/compression.h"
#include "io/local_source.h"
#include "rootio/rntuple_blob.h"
#include "rootio/rntuple_envelope.h"
#include "rootio/rntuple_frame.h"
#include "rootio/rntuple_page.h"
#include "rootio/rntuple_schema.h"
#include "rootio/rntuple_test_bytes.h"
#include "testing/testing.h"

namespace ferry::rootio {
namespace {

using namespace testbytes;  // NOLINT(google-build-using-namespace): test helpers

TEST(RntupleFormat, FramesSkipWhatANewerWriterAppended) {
  std::vector<uint8_t> bytes = RecordFrame(Bytes().Put<uint32_t>(7).Put<uint32_t>(99).b);
  bytes.push_back(0x5A);
  LeCursor c(bytes);
  auto f = ReadFrame(c, /*want_list=*/false, "test");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(c.U32(), 7u);  // the reader knows only the first field
  ASSERT_TRUE(EndFrame(c, *f, "test").has_value());
  EXPECT_EQ(c.pos(), 16u);
}

TEST(RntupleFormat, BadFramesAreCorruption) {
  struct Case {
    std::vector<uint8_t> bytes;
    bool want_list;
  };
  for (const Case& k : {
           Case{Bytes().Put<int64_t>(4).b, false},                     // smaller than itself
           Case{Bytes().Put<int64_t>(100).b, false},                   // past the end
           Case{Bytes().Put<int64_t>(-12).Put<uint32_t>(0).b, false},  // a list, not a record
           Case{RecordFrame({}), true},                                // a record, not a list
           Case{Bytes().Put<int64_t>(-8).Put<uint32_t>(0).b, true},    // list preamble is 12
           Case{Bytes().Put<int64_t>(std::numeric_limits<int64_t>::min()).b, true},
           Case{{1, 2, 3}, false},  // truncated
       }) {
    LeCursor c(k.bytes);
    auto f = ReadFrame(c, k.want_list, "frame");
    ASSERT_FALSE(f.has_value());
    EXPECT_EQ(f.error().code(), ErrorCode::kCorruption);
  }
}

TEST(RntupleFormat, ListCountsCannotOutgrowTheirFrame) {
  // A header whose field list claims a billion records in 12 bytes.
  std::vector<uint8_t> payload = Bytes().Put<uint64_t>(0).Str("n").Str("").Str("w").b;
  auto list = ListFrame(1000000000, {});
  payload.insert(payload.end(), list.begin(), list.end());
  auto h = ParseHeader(payload, "header");
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().code(), ErrorCode::kCorruption);
}

TEST(RntupleFormat, Locators) {
  std::vector<uint8_t> standard = Bytes().Put<int32_t>(321).Put<uint64_t>(1234567).b;
  LeCursor c1(standard);
  auto l1 = ReadLocator(c1, "loc");
  ASSERT_TRUE(l1.has_value());
  EXPECT_EQ(l1->size, 321u);
  EXPECT_EQ(l1->offset, 1234567u);

  // Large: -(own size 20 | type 1 << 24), then 64-bit size and offset.
  int32_t head = -static_cast<int32_t>(20 | (1 << 24));
  std::vector<uint8_t> large =
      Bytes().Put<int32_t>(head).Put<uint64_t>(uint64_t{5} << 32).Put<uint64_t>(77).b;
  LeCursor c2(large);
  auto l2 = ReadLocator(c2, "loc");
  ASSERT_TRUE(l2.has_value());
  EXPECT_EQ(l2->size, uint64_t{5} << 32);
  EXPECT_EQ(l2->offset, 77u);
  EXPECT_EQ(c2.pos(), 20u);

  // Type 2 is an object-store locator: not a place in a file.
  std::vector<uint8_t> object = Bytes().Put<int32_t>(-static_cast<int32_t>(12 | (2 << 24))).b;
  object.resize(12);
  LeCursor c3(object);
  auto l3 = ReadLocator(c3, "loc");
  ASSERT_FALSE(l3.has_value());
  EXPECT_EQ(l3.error().code(), ErrorCode::kUnsupported);
}

TEST(RntupleFormat, UnknownFeatureFlagsAreRefused) {
  std::vector<uint8_t> bytes = Bytes().Put<uint64_t>(1).b;
  LeCursor c(bytes);
  auto s = ReadFeatureFlags(c, "header");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), ErrorCode::kUnsupported);
}

TEST(RntupleFormat, EnvelopesAreVerified) {
  std::vector<uint8_t> env = MakeEnvelope(2, {1, 2, 3, 4});
  EXPECT_TRUE(VerifyEnvelope(env, EnvelopeType::kFooter, "footer").has_value());
  auto wrong_type = VerifyEnvelope(env, EnvelopeType::kHeader, "header");
  ASSERT_FALSE(wrong_type.has_value());
  EXPECT_NE(wrong_type.error().message().find("envelope type 2"), std::string::npos);
  env[9] ^= 1;
  auto flipped = VerifyEnvelope(env, EnvelopeType::kFooter, "RNTuple 'x' footer envelope");
  ASSERT_FALSE(flipped.has_value());
  EXPECT_EQ(flipped.error().message(), "RNTuple 'x' footer envelope: checksum mismatch");
  std::vector<uint8_t> shorter(env.begin(), env.end() - 1);
  EXPECT_FALSE(VerifyEnvelope(shorter, EnvelopeType::kFooter, "footer").has_value());
}

TEST(RntupleFormat, HeaderRecordsKeepTheirOptionalFields) {
  std::vector<uint8_t> field = Bytes()
                                   .Put<uint32_t>(0)
                                   .Put<uint32_t>(0)
                                   .Put<uint32_t>(0)
                                   .Put<uint16_t>(0)  // leaf
                                   .Put<uint16_t>(FieldFlags::kRepetitive | FieldFlags::kProjected)
                                   .Str("bits")
                                   .Str("std::bitset<12>")
                                   .Str("")
                                   .Str("")
                                   .Put<uint64_t>(12)
                                   .Put<uint32_t>(3)
                                   .Put<uint32_t>(0xABCD)  // appended by a newer writer
                                   .b;
  std::vector<uint8_t> column = Bytes()
                                    .Put<uint16_t>(0x1D)
                                    .Put<uint16_t>(7)
                                    .Put<uint32_t>(0)
                                    .Put<uint16_t>(ColumnFlags::kDeferred | ColumnFlags::kRange)
                                    .Put<uint16_t>(1)
                                    .Put<int64_t>(-40)
                                    .Put<double>(-1.5)
                                    .Put<double>(2.5)
                                    .b;
  std::vector<uint8_t> payload = Bytes()
                                     .Put<uint64_t>(0)
                                     .Str("nt")
                                     .Str("about")
                                     .Str("ROOT v6")
                                     .Append(ListFrame(1, RecordFrame(field)))
                                     .Append(ListFrame(1, RecordFrame(column)))
                                     .Append(ListFrame(0, {}))
                                     .Append(ListFrame(0, {}))
                                     .b;
  auto h = ParseHeader(payload, "header");
  ASSERT_TRUE(h.has_value()) << h.error().ToString();
  EXPECT_EQ(h->name, "nt");
  EXPECT_EQ(h->writer, "ROOT v6");
  ASSERT_EQ(h->schema.fields.size(), 1u);
  EXPECT_EQ(h->schema.fields[0].array_size, 12u);
  EXPECT_EQ(h->schema.fields[0].source_field_id, 3u);
  ASSERT_EQ(h->schema.columns.size(), 1u);
  EXPECT_EQ(h->schema.columns[0].first_element, -40);
  EXPECT_EQ(h->schema.columns[0].representation, 1u);
  EXPECT_EQ(h->schema.columns[0].max, 2.5);
}

// Writes a blob the way the spec describes a payload larger than the max key size: the first
// key holds the start of the payload and the offsets of the other keys.
std::vector<uint8_t> SplitBlobFile(const std::vector<uint8_t>& payload,
                                   uint64_t max_key,
                                   uint64_t chunks,
                                   uint64_t* first_at) {
  std::vector<uint8_t> file(50, 0xEE);  // something before, so offsets are not 0
  uint64_t offsets_size = (chunks - 1) * 8;
  uint64_t first_payload = max_key - offsets_size;
  *first_at = file.size();
  file.insert(file.end(), payload.begin(), payload.begin() + static_cast<ptrdiff_t>(first_payload));
  size_t table = file.size();
  file.resize(table + offsets_size);
  uint64_t done = first_payload;
  for (uint64_t k = 1; k < chunks; ++k) {
    file.push_back(0xEE);  // a gap between keys
    StoreLE<uint64_t>(file.data() + table + (k - 1) * 8, file.size());
    uint64_t n = std::min<uint64_t>(max_key, payload.size() - done);
    file.insert(file.end(), payload.begin() + static_cast<ptrdiff_t>(done),
                payload.begin() + static_cast<ptrdiff_t>(done + n));
    done += n;
  }
  return file;
}

TEST(RntupleFormat, BlobsLargerThanTheMaxKeySizeAreReassembled) {
  // 250 bytes in keys of 100: three keys, the tail leaves room for the two offsets.
  EXPECT_EQ(ChunkCount(250, 100), 3u);
  // 200 bytes: two full keys leave no room for the offset, so a third key is needed.
  EXPECT_EQ(ChunkCount(200, 100), 3u);
  for (uint64_t size : {250u, 200u, 101u, 1000u}) {
    std::vector<uint8_t> payload = testing::PseudoRandomBytes(size, size);
    uint64_t at = 0;
    auto file = SplitBlobFile(payload, 100, ChunkCount(size, 100), &at);
    io::MemorySource src(file, "split");
    ByteVector out;
    ASSERT_TRUE(ReadBlob(src, at, size, 100, "blob", &out).has_value()) << size;
    EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), payload) << size;
  }
}

TEST(RntupleFormat, OversizedPagesAreRefusedBeforeReading) {
  io::MemorySource src(std::vector<uint8_t>(64, 0), "small");
  ColumnRecord column;
  column.type = static_cast<uint16_t>(ColumnType::kInt32);
  column.bits = 32;
  PageInfo page;
  page.elements = kMaxPageElements + 1;
  page.locator = {0, 32};
  ByteVector out;
  auto s = ReadPage(src, page, column, 0, "page", &out);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(src.stats().bytes, 0u);
}

TEST(RntupleFormat, BlobsOutsideTheFileAreCorruption) {
  io::MemorySource src(std::vector<uint8_t>(300, 0), "small");
  ByteVector out;
  auto big = ReadBlob(src, 0, uint64_t{1} << 40, 0, "page", &out);
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().code(), ErrorCode::kCorruption);
  EXPECT_FALSE(ReadBlob(src, 250, 100, 0, "page", &out).has_value());
  // Chunk offsets pointing past the end.
  std::vector<uint8_t> bytes(300, 0xFF);
  io::MemorySource bad(bytes, "bad");
  EXPECT_FALSE(ReadBlob(bad, 0, 250, 100, "page", &out).has_value());
}

std::vector<uint8_t> ElementBytes(const std::vector<int32_t>& v) {
  Bytes b;
  for (int32_t x : v) {
    b.Put<int32_t>(x);
  }
  return b.b;
}

// A page stored with every codec ROOT writes, read back through its locator and checksum.
TEST(RntupleFormat, PagesDecompressWithEveryCodec) {
  std::vector<int32_t> values;
  for (int32_t i = 0; i < 3000; ++i) {
    values.push_back(i % 17 - 8);
  }
  std::vector<uint8_t> raw = ElementBytes(values);
  ColumnRecord column;
  column.type = static_cast<uint16_t>(ColumnType::kInt32);
  column.bits = 32;
  for (codec::Algorithm a :
       {codec::Algorithm::kNone, codec::Algorithm::kZlib, codec::Algorithm::kLzma,
        codec::Algorithm::kLz4, codec::Algorithm::kZstd}) {
    SCOPED_TRACE(std::string(codec::AlgorithmName(a)));
    std::vector<uint8_t> stored = raw;
    if (a != codec::Algorithm::kNone) {
      ByteVector packed;
      auto shrank = codec::CompressPayload({a, 5}, raw, &packed);
      ASSERT_TRUE(shrank.has_value() && *shrank);
      stored.assign(packed.begin(), packed.end());
    }
    std::vector<uint8_t> file(10, 0);
    PageInfo page;
    page.elements = static_cast<uint32_t>(values.size());
    page.has_checksum = true;
    page.locator = {file.size(), stored.size()};
    file.insert(file.end(), stored.begin(), stored.end());
    Bytes sum;
    sum.Put<uint64_t>(hash::Xxh3(stored.data(), stored.size()));
    file.insert(file.end(), sum.b.begin(), sum.b.end());
    io::MemorySource src(file, "page");
    ByteVector bytes;
    ASSERT_TRUE(ReadPage(src, page, column, 0, "page", &bytes).has_value());
    ColumnValues out;
    ASSERT_TRUE(DecodePage(column, bytes, page.elements, "page", &out).has_value());
    ASSERT_EQ(out.ints.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(out.ints[i], values[i]) << i;
    }
    file[12] ^= 0x10;
    io::MemorySource flipped(file, "page");
    auto bad = ReadPage(flipped, page, column, 0, "page 7", &bytes);
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().message(), "page 7: page checksum mismatch");
  }
}

ColumnValues Decode(ColumnType type, uint16_t bits, const std::vector<uint8_t>& page, uint32_t n) {
  ColumnRecord column;
  column.type = static_cast<uint16_t>(type);
  column.bits = bits;
  if (type == ColumnType::kReal32Quant) {
    column.flags = ColumnFlags::kRange;
    column.min = -1;
    column.max = 2;
  }
  ColumnValues out;
  auto s = DecodePage(column, page, n, "page", &out);
  EXPECT_TRUE(s.has_value()) << s.error().ToString();
  return out;
}

// Byte split: all first bytes, then all second bytes...
std::vector<uint8_t> Split(const std::vector<uint8_t>& plain, size_t width) {
  size_t n = plain.size() / width;
  std::vector<uint8_t> out(plain.size());
  for (size_t i = 0; i < n; ++i) {
    for (size_t b = 0; b < width; ++b) {
      out[b * n + i] = plain[i * width + b];
    }
  }
  return out;
}

TEST(RntupleFormat, SplitZigzagAndDeltaEncodings) {
  std::vector<int64_t> ints = {
      0, -1, 1, -1000000, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
  Bytes zigzag;
  for (int64_t v : ints) {
    auto x = static_cast<int32_t>(v);
    zigzag.Put<uint32_t>((static_cast<uint32_t>(x) << 1) ^ static_cast<uint32_t>(x >> 31));
  }
  EXPECT_EQ(Decode(ColumnType::kSplitInt32, 32, Split(zigzag.b, 4), 6).ints, ints);

  std::vector<int64_t> offsets = {3, 3, 10, 4000000000, 4000000001};
  Bytes delta;
  int64_t prev = 0;
  for (int64_t v : offsets) {
    delta.Put<uint64_t>(static_cast<uint64_t>(v - prev));
    prev = v;
  }
  EXPECT_EQ(Decode(ColumnType::kSplitIndex64, 64, Split(delta.b, 8), 5).ints, offsets);

  Bytes u16;
  for (uint16_t v : std::vector<uint16_t>{0, 1, 65535, 256}) {
    u16.Put<uint16_t>(v);
  }
  EXPECT_EQ(Decode(ColumnType::kSplitUInt16, 16, Split(u16.b, 2), 4).ints,
            (std::vector<int64_t>{0, 1, 65535, 256}));

  Bytes reals;
  for (double v : {1.5, -0.0, 1e300}) {
    reals.Put<double>(v);
  }
  EXPECT_EQ(Decode(ColumnType::kSplitReal64, 64, Split(reals.b, 8), 3).reals,
            (std::vector<double>{1.5, -0.0, 1e300}));
}

// The bulk decoder transposes split pages 16 or 32 elements at a time (SSE2, AVX2 where the
// CPU has it) and the rest one by one: every length around those blocks gives back the values.
TEST(RntupleFormat, SplitPagesOfEveryLengthDecodeNatively) {
  for (uint32_t n : {0u, 1u, 15u, 16u, 17u, 31u, 32u, 33u, 47u, 63u, 64u, 65u, 100u, 1000u}) {
    for (auto [type, width] :
         {std::pair{ColumnType::kSplitUInt16, 2}, std::pair{ColumnType::kSplitUInt32, 4},
          std::pair{ColumnType::kSplitUInt64, 8}, std::pair{ColumnType::kSplitIndex32, 4}}) {
      std::vector<uint8_t> plain(size_t{n} * static_cast<size_t>(width));
      for (size_t i = 0; i < plain.size(); ++i) {
        plain[i] = static_cast<uint8_t>(i * 131 + i / 7 + 3);  // every byte plane differs
      }
      ColumnRecord column;
      column.type = static_cast<uint16_t>(type);
      column.bits = static_cast<uint16_t>(8 * width);
      ByteVector out;
      ASSERT_TRUE(
          DecodePageNative(column, Split(plain, static_cast<size_t>(width)), n, "page", &out)
              .has_value());
      if (type != ColumnType::kSplitIndex32) {
        EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), plain)
            << "width " << width << ", " << n << " elements";
        continue;
      }
      // Index32: deltas within the page, summed and widened to uint64.
      ASSERT_EQ(out.size(), size_t{n} * 8);
      uint64_t sum = 0;
      for (size_t i = 0; i < n; ++i) {
        sum += LoadLE<uint32_t>(plain.data() + 4 * i);
        ASSERT_EQ(LoadLE<uint64_t>(out.data() + 8 * i), sum) << n << " elements, element " << i;
      }
    }
  }
}

TEST(RntupleFormat, HalfFloats) {
  Bytes halves;
  for (uint16_t h : std::vector<uint16_t>{0x3C00, 0xC100, 0x7BFF, 0x0001, 0x7C00, 0x8000}) {
    halves.Put<uint16_t>(h);
  }
  std::vector<double> want = {1.0, -2.5, 65504.0, std::ldexp(1.0, -24), INFINITY, -0.0};
  EXPECT_EQ(Decode(ColumnType::kReal16, 16, halves.b, 6).reals, want);
  EXPECT_EQ(Decode(ColumnType::kSplitReal16, 16, Split(halves.b, 2), 6).reals, want);
}

TEST(RntupleFormat, BitsAndSwitches) {
  // 10 bools, least significant bit first: 1,0,1,1,0,0,0,0 | 0,1
  EXPECT_EQ(Decode(ColumnType::kBit, 1, {0x0D, 0x02}, 10).ints,
            (std::vector<int64_t>{1, 0, 1, 1, 0, 0, 0, 0, 0, 1}));
  Bytes sw;
  sw.Put<uint64_t>(5).Put<uint32_t>(2).Put<uint64_t>(0).Put<uint32_t>(0);
  ColumnValues v = Decode(ColumnType::kSwitch, 96, sw.b, 2);
  EXPECT_EQ(v.ints, (std::vector<int64_t>{5, 0}));
  EXPECT_EQ(v.tags, (std::vector<uint32_t>{2, 0}));
}

// N-bit items packed least significant bit first into one stream.
std::vector<uint8_t> Pack(const std::vector<uint32_t>& items, int bits) {
  std::vector<uint8_t> out((items.size() * static_cast<size_t>(bits) + 7) / 8, 0);
  size_t bit = 0;
  for (uint32_t item : items) {
    for (int k = 0; k < bits; ++k, ++bit) {
      if (((item >> k) & 1) != 0) {
        out[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
      }
    }
  }
  return out;
}

TEST(RntupleFormat, TruncatedAndQuantizedReals) {
  // Real32Trunc keeps the top N bits of the float.
  std::vector<float> floats = {1.2345678f, -3.75e-20f, 1e30f, -0.0f};
  for (int bits : {10, 17, 31}) {
    std::vector<uint32_t> items;
    std::vector<double> want;
    for (float f : floats) {
      uint32_t u = std::bit_cast<uint32_t>(f);
      items.push_back(u >> (32 - bits));
      want.push_back(std::bit_cast<float>(u & ~((uint32_t{1} << (32 - bits)) - 1)));
    }
    EXPECT_EQ(
        Decode(ColumnType::kReal32Trunc, static_cast<uint16_t>(bits), Pack(items, bits), 4).reals,
        want)
        << bits;
  }
  // Real32Quant: N-bit steps over [min, max] = [-1, 2].
  for (int bits : {1, 7, 20, 32}) {
    double top = std::ldexp(1.0, bits) - 1;
    std::vector<uint32_t> items = {0, static_cast<uint32_t>(top), static_cast<uint32_t>(top / 3)};
    ColumnValues v =
        Decode(ColumnType::kReal32Quant, static_cast<uint16_t>(bits), Pack(items, bits), 3);
    ASSERT_EQ(v.reals.size(), 3u);
    EXPECT_EQ(v.reals[0], -1.0);
    EXPECT_EQ(v.reals[1], 2.0);
    EXPECT_NEAR(v.reals[2], -1.0 + 3.0 * static_cast<double>(items[2]) / top, 1e-12);
  }
}

TEST(RntupleFormat, ShortPagesAndBadColumnsAreErrors) {
  ColumnRecord column;
  column.type = static_cast<uint16_t>(ColumnType::kInt64);
  column.bits = 64;
  ColumnValues out;
  std::vector<uint8_t> seven(7, 0);
  EXPECT_EQ(DecodePage(column, seven, 1, "page", &out).error().code(), ErrorCode::kCorruption);
  column.bits = 32;  // Int64 is 64 bits wide
  EXPECT_EQ(CheckColumnRecord(column, "c").error().code(), ErrorCode::kCorruption);
  column.type = 0x99;
  EXPECT_EQ(CheckColumnRecord(column, "c").error().code(), ErrorCode::kUnsupported);
  column.type = static_cast<uint16_t>(ColumnType::kReal32Quant);
  column.bits = 8;  // without its range
  EXPECT_EQ(CheckColumnRecord(column, "c").error().code(), ErrorCode::kCorruption);
}

}  // namespace
}  // namespace ferry::rootio
