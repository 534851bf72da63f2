#include "codec/compression.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>
#include <zlib.h>

#include "testing/testing.h"

namespace ferry::codec {
namespace {

// Compressible but not trivial: a repeating record with a counter.
std::vector<uint8_t> SampleBytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<uint8_t>((i % 251) ^ ((i / 4096) & 0x3));
  }
  return v;
}

class CodecRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(CodecRoundTrip, PayloadRoundTripsAndIsFramed) {
  Setting s = *Setting::Parse(GetParam());
  auto in = SampleBytes(200000);
  ByteVector out;
  auto r = CompressPayload(s, in, &out);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_TRUE(*r);
  EXPECT_LT(out.size(), in.size());
  EXPECT_EQ(DetectAlgorithm(out), s.algorithm);
  auto h = ParseBlockHeader(out);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->uncompressed_size, in.size());
  EXPECT_EQ(h->compressed_size + kBlockHeaderSize, out.size());
  std::vector<uint8_t> back(in.size());
  auto st = DecompressPayload(out, back);
  ASSERT_TRUE(st.has_value()) << st.error().ToString();
  EXPECT_EQ(back, in);
}

TEST_P(CodecRoundTrip, TruncatedPayloadIsAnError) {
  Setting s = *Setting::Parse(GetParam());
  auto in = SampleBytes(50000);
  ByteVector out;
  ASSERT_TRUE(*CompressPayload(s, in, &out));
  std::vector<uint8_t> back(in.size());
  for (size_t cut : {size_t{0}, size_t{5}, size_t{9}, out.size() / 2, out.size() - 1}) {
    std::span<const uint8_t> part(out.data(), cut);
    auto st = DecompressPayload(part, back);
    EXPECT_FALSE(st.has_value()) << "cut at " << cut;
  }
}

TEST_P(CodecRoundTrip, CorruptBodyIsAnErrorNotACrash) {
  Setting s = *Setting::Parse(GetParam());
  auto in = SampleBytes(50000);
  ByteVector out;
  ASSERT_TRUE(*CompressPayload(s, in, &out));
  int errors = 0;
  for (size_t pos = kBlockHeaderSize; pos < out.size(); pos += 97) {
    auto bad = out;
    bad[pos] ^= 0x5A;
    std::vector<uint8_t> back(in.size());
    auto st = DecompressPayload(bad, back);
    if (!st.has_value()) {
      ++errors;
      EXPECT_EQ(st.error().code(), ErrorCode::kCorruption);
    }
  }
  // Every codec here carries a checksum or strict structure that catches most flips.
  EXPECT_GT(errors, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms,
    CodecRoundTrip,
    ::testing::Values(
        "zlib:1", "zlib:9", "lzma:1", "lzma:9", "zstd:1", "zstd:19", "lz4:1", "lz4:9"));

TEST(Compression, Lz4ChecksumMismatchIsNamed) {
  auto in = SampleBytes(10000);
  ByteVector out;
  ASSERT_TRUE(*CompressPayload(*Setting::Parse("lz4"), in, &out));
  out[kBlockHeaderSize + 2] ^= 1;  // inside the stored XXH64
  std::vector<uint8_t> back(in.size());
  auto st = DecompressPayload(out, back);
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().ToString().find("checksum"), std::string::npos);
}

TEST(Compression, SizeMismatchIsAnError) {
  auto in = SampleBytes(10000);
  ByteVector out;
  ASSERT_TRUE(*CompressPayload(*Setting::Parse("zstd:3"), in, &out));
  std::vector<uint8_t> small(in.size() - 1);
  EXPECT_FALSE(DecompressPayload(out, small).has_value());
  std::vector<uint8_t> big(in.size() + 1);
  EXPECT_FALSE(DecompressPayload(out, big).has_value());
}

TEST(Compression, MultiBlockPayloadAbove16MiB) {
  const size_t n = kMaxBlockSize * 2 + 12345;
  auto in = SampleBytes(n);
  ByteVector out;
  ASSERT_TRUE(*CompressPayload(*Setting::Parse("zstd:1"), in, &out));
  // Three blocks: walk the headers.
  size_t pos = 0;
  int blocks = 0;
  size_t total = 0;
  while (pos < out.size()) {
    auto h = ParseBlockHeader(std::span<const uint8_t>(out).subspan(pos));
    ASSERT_TRUE(h.has_value());
    total += h->uncompressed_size;
    pos += kBlockHeaderSize + h->compressed_size;
    ++blocks;
  }
  EXPECT_EQ(blocks, 3);
  EXPECT_EQ(total, n);
  std::vector<uint8_t> back(n);
  ASSERT_TRUE(DecompressPayload(out, back).has_value());
  EXPECT_TRUE(back == in);
}

TEST(Compression, IncompressibleDataIsStoredRaw) {
  auto in = testing::PseudoRandomBytes(4096, 5);
  ByteVector out;
  out.push_back(42);
  auto r = CompressPayload(*Setting::Parse("zlib:1"), in, &out);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(*r);
  EXPECT_EQ(out.size(), 1u);  // untouched
}

TEST(Compression, ZlibBlocksFromZlibItselfDecode) {
  // A block produced by zlib (as ROOT does), not by libdeflate.
  auto in = SampleBytes(30000);
  uLongf bound = compressBound(static_cast<uLong>(in.size()));
  std::vector<uint8_t> body(bound);
  ASSERT_EQ(compress2(body.data(), &bound, in.data(), static_cast<uLong>(in.size()), 4), Z_OK);
  body.resize(bound);
  std::vector<uint8_t> framed = {'Z', 'L', 8};
  for (size_t v : {body.size(), in.size()}) {
    framed.push_back(static_cast<uint8_t>(v & 0xFF));
    framed.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
    framed.push_back(static_cast<uint8_t>((v >> 16) & 0xFF));
  }
  framed.insert(framed.end(), body.begin(), body.end());
  std::vector<uint8_t> back(in.size());
  ASSERT_TRUE(DecompressPayload(framed, back).has_value());
  EXPECT_EQ(back, in);
}

TEST(Compression, OldRootCsBlocksDecode) {
  // "CS" blocks carry raw deflate data; build one synthetically.
  auto in = SampleBytes(20000);
  ByteVector body;
  ASSERT_TRUE(CompressBlock(Setting{Algorithm::kOldRoot, 6}, in, &body).has_value());
  std::vector<uint8_t> framed = {'C', 'S', 8};
  for (size_t v : {body.size(), in.size()}) {
    framed.push_back(static_cast<uint8_t>(v & 0xFF));
    framed.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
    framed.push_back(static_cast<uint8_t>((v >> 16) & 0xFF));
  }
  framed.insert(framed.end(), body.begin(), body.end());
  EXPECT_EQ(DetectAlgorithm(framed), Algorithm::kOldRoot);
  std::vector<uint8_t> back(in.size());
  ASSERT_TRUE(DecompressPayload(framed, back).has_value());
  EXPECT_EQ(back, in);
}

TEST(Compression, UnknownTagIsCorruption) {
  std::vector<uint8_t> junk = {'Q', 'Q', 0, 1, 0, 0, 1, 0, 0, 0};
  std::vector<uint8_t> out(1);
  auto st = DecompressPayload(junk, out);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kCorruption);
}

TEST(Setting, ParseAndRootSetting) {
  EXPECT_EQ(Setting::Parse("zlib:1")->RootSetting(), 101);
  EXPECT_EQ(Setting::Parse("lzma:9")->RootSetting(), 209);
  EXPECT_EQ(Setting::Parse("zstd:5")->RootSetting(), 505);
  EXPECT_EQ(Setting::Parse("lz4")->RootSetting(), 404);
  EXPECT_EQ(Setting::Parse("none")->RootSetting(), 0);
  EXPECT_FALSE(Setting::Parse("zlib:12").has_value());
  EXPECT_FALSE(Setting::Parse("brotli").has_value());
  EXPECT_EQ(Setting::Parse("zstd:19")->ToString(), "zstd:19");
}

}  // namespace
}  // namespace ferry::codec
