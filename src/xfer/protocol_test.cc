#include "xfer/protocol.h"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "base/endian.h"
#include "xfer/payload_hasher.h"
#include "xfer/tuning.h"

namespace ferry::xfer {
namespace {

std::array<uint8_t, kFrameHeaderSize> Encode(const FrameHeader& h) {
  std::array<uint8_t, kFrameHeaderSize> b{};
  EncodeFrameHeader(h, b);
  return b;
}

void Reseal(std::array<uint8_t, kFrameHeaderSize>& b) {
  StoreLE<uint32_t>(b.data() + 36, crc32c::Value(b.data(), 36));
}

TEST(XferFrameHeader, RoundTrip) {
  FrameHeader h{.type = FrameType::kData,
                .flags = 0,
                .length = 16u << 20,
                .file_id = 7,
                .block = 123456789,
                .payload_hash = 0x0123456789abcdefull};
  auto b = Encode(h);
  EXPECT_EQ(b[0], 'F');
  EXPECT_EQ(b[1], 'R');
  EXPECT_EQ(b[2], 'Y');
  EXPECT_EQ(b[3], 'X');
  auto p = ParseFrameHeader(b);
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_EQ(p->type, FrameType::kData);
  EXPECT_EQ(p->length, h.length);
  EXPECT_EQ(p->file_id, 7u);
  EXPECT_EQ(p->block, 123456789u);
  EXPECT_EQ(p->payload_hash, h.payload_hash);
}

TEST(XferFrameHeader, RejectsEveryKindOfDamage) {
  auto good = Encode({.type = FrameType::kAck, .flags = 1, .file_id = 1, .block = 2});
  ASSERT_TRUE(ParseFrameHeader(good).has_value());
  EXPECT_FALSE(ParseFrameHeader(std::span<const uint8_t>(good).first(39)).has_value());
  for (size_t byte = 0; byte < kFrameHeaderSize; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      auto b = good;
      b[byte] = static_cast<uint8_t>(b[byte] ^ (1u << bit));
      EXPECT_FALSE(ParseFrameHeader(b).has_value()) << "byte " << byte << " bit " << bit;
    }
  }
  auto version = good;
  version[4] = 2;
  Reseal(version);
  auto r = ParseFrameHeader(version);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  auto type = good;
  type[5] = 0x7f;
  Reseal(type);
  EXPECT_FALSE(ParseFrameHeader(type).has_value());
  auto flags = good;
  StoreLE<uint16_t>(flags.data() + 6, 9);
  Reseal(flags);
  EXPECT_FALSE(ParseFrameHeader(flags).has_value());
  auto reserved = good;
  reserved[33] = 1;
  Reseal(reserved);
  EXPECT_FALSE(ParseFrameHeader(reserved).has_value());
}

TEST(XferFrameHeader, LengthLimitsPerType) {
  EXPECT_TRUE(
      ParseFrameHeader(Encode({.type = FrameType::kData, .length = kMaxBlockSize})).has_value());
  EXPECT_FALSE(ParseFrameHeader(Encode({.type = FrameType::kData, .length = kMaxBlockSize + 1}))
                   .has_value());
  EXPECT_FALSE(ParseFrameHeader(Encode({.type = FrameType::kAck, .length = 1})).has_value());
  EXPECT_FALSE(
      ParseFrameHeader(Encode({.type = FrameType::kHello, .length = kHelloSize + 1})).has_value());
  EXPECT_FALSE(
      ParseFrameHeader(Encode({.type = FrameType::kManifest, .length = kMaxControlPayload + 1}))
          .has_value());
}

TEST(XferMessages, HelloChallengeRoundTrip) {
  Hello h;
  h.role = Role::kData;
  h.stream_index = 5;
  h.session[0] = 9;
  h.client_nonce[31] = 7;
  auto enc = EncodeHello(h);
  EXPECT_EQ(enc.size(), kHelloSize);
  auto d = DecodeHello(enc);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->role, Role::kData);
  EXPECT_EQ(d->stream_index, 5);
  EXPECT_EQ(d->session, h.session);
  EXPECT_EQ(d->client_nonce, h.client_nonce);
  enc[0] = 3;  // bad role
  EXPECT_FALSE(DecodeHello(enc).has_value());

  Challenge c;
  c.server_nonce[0] = 1;
  c.server_flags = 1;
  auto ce = EncodeChallenge(c);
  EXPECT_EQ(ce.size(), kChallengeSize);
  auto cd = DecodeChallenge(ce);
  ASSERT_TRUE(cd.has_value());
  EXPECT_EQ(cd->server_flags, 1u);
}

TEST(XferMessages, ProofsBindTheConnection) {
  Hello h;
  Nonce server{};
  std::string key = "secret";
  std::span<const uint8_t> k(reinterpret_cast<const uint8_t*>(key.data()), key.size());
  Digest256 a = *ClientProof(k, h, server);
  EXPECT_NE(a, *ServerProof(k, h, server));
  Hello other = h;
  other.stream_index = 1;
  EXPECT_NE(a, *ClientProof(k, other, server));
  server[0] = 1;
  EXPECT_NE(a, *ClientProof(k, h, server));
  EXPECT_NE(a, *ClientProof({}, h, Nonce{}));
}

TEST(XferMessages, ManifestRoundTripAndLimits) {
  ManifestChunk m;
  m.block_size = 16u << 20;
  m.streams = 8;
  m.rate_bps = 2'000'000'000;
  m.rtt_us = 100000;
  m.total_files = 3;
  m.first_file_id = 1;
  m.entries.push_back({0, 1, 0644, "a/empty"});
  m.entries.push_back({12345, -5, 0600, "a/b/c.bin"});
  auto enc = EncodeManifest(m);
  auto d = DecodeManifest(enc);
  ASSERT_TRUE(d.has_value()) << d.error().ToString();
  EXPECT_EQ(d->streams, 8);
  ASSERT_EQ(d->entries.size(), 2u);
  EXPECT_EQ(d->entries[1].path, "a/b/c.bin");
  EXPECT_EQ(d->entries[1].mtime_ns, -5);
  // Truncations at every length fail cleanly.
  for (size_t n = 0; n < enc.size(); ++n) {
    EXPECT_FALSE(DecodeManifest(std::span<const uint8_t>(enc).first(n)).has_value()) << n;
  }
  // Entries beyond the announced total.
  m.total_files = 2;
  EXPECT_FALSE(DecodeManifest(EncodeManifest(m)).has_value());
  m.total_files = 3;
  m.block_size = 5000;
  EXPECT_FALSE(DecodeManifest(EncodeManifest(m)).has_value());
}

// A named transfer (`ferry send FILE HOST:PORT/NAME`) carries the source's base name after the
// entries; a cut inside it fails, and without it the chunk decodes as before.
TEST(XferMessages, ManifestSourceNameRoundTrip) {
  ManifestChunk m;
  m.block_size = 1u << 20;
  m.total_files = 1;
  m.entries.push_back({10, 0, 0644, "renamed.bin"});
  m.source_name = "f.bin";
  auto enc = EncodeManifest(m);
  auto d = DecodeManifest(enc);
  ASSERT_TRUE(d.has_value()) << d.error().ToString();
  EXPECT_EQ(d->source_name, "f.bin");
  EXPECT_EQ(d->entries.at(0).path, "renamed.bin");
  EXPECT_FALSE(DecodeManifest(std::span<const uint8_t>(enc).first(enc.size() - 1)).has_value());
  m.source_name.clear();
  auto plain = DecodeManifest(EncodeManifest(m));
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->source_name.empty());
}

TEST(XferMessages, ErrorCodesSurviveTheWire) {
  for (ErrorCode c : {ErrorCode::kNoSpace, ErrorCode::kPermission, ErrorCode::kCorruption}) {
    Error e = DecodeErrorMessage(EncodeErrorMessage(c, "bad\nthing"), "peer: ");
    EXPECT_EQ(e.code(), c);
    EXPECT_EQ(e.message(), "peer: bad?thing");
  }
}

TEST(XferMessages, BlockHashesAndFileDone) {
  std::vector<BlockHash> v = {{0, 1}, {5, 0xffffffffffffffffull}};
  auto d = DecodeBlockHashes(EncodeBlockHashes(v));
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[1].hash, 0xffffffffffffffffull);
  auto enc = EncodeBlockHashes(v);
  enc.pop_back();
  EXPECT_FALSE(DecodeBlockHashes(enc).has_value());
  auto fd = DecodeFileDone(EncodeFileDone({10, 20}));
  ASSERT_TRUE(fd.has_value());
  EXPECT_EQ(fd->digest, 20u);
}

TEST(XferDigest, DependsOnSizesAndOrder) {
  std::vector<uint64_t> h = {1, 2, 3};
  uint64_t d = FileDigest(100, 4096, h);
  EXPECT_EQ(d, FileDigest(100, 4096, h));
  EXPECT_NE(d, FileDigest(101, 4096, h));
  EXPECT_NE(d, FileDigest(100, 8192, h));
  std::vector<uint64_t> swapped = {2, 1, 3};
  EXPECT_NE(d, FileDigest(100, 4096, swapped));
  std::vector<uint64_t> many(1000, 7);
  EXPECT_NE(FileDigest(0, 4096, many), FileDigest(0, 4096, std::span(many).first(999)));
  EXPECT_EQ(DigestHex(0x1f), "000000000000001f");
}

TEST(XferPayloadHasher, PiecesGiveThePayloadHash) {
  std::vector<uint8_t> data(1'000'003);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  }
  PayloadHasher h;
  for (size_t piece : {size_t{1}, size_t{4096}, size_t{65536}, size_t{262144}, data.size()}) {
    h.Reset();  // reused: the same result every time
    for (size_t at = 0; at < data.size(); at += piece) {
      h.Update(data.data() + at, std::min(piece, data.size() - at));
    }
    EXPECT_EQ(h.Digest(), PayloadHash(data)) << "pieces of " << piece;
  }
  h.Reset();
  EXPECT_EQ(h.Digest(), PayloadHash({}));
}

TEST(XferBlocks, CountAndLength) {
  EXPECT_EQ(BlockCount(0, 4096), 0u);
  EXPECT_EQ(BlockCount(1, 4096), 1u);
  EXPECT_EQ(BlockCount(4096, 4096), 1u);
  EXPECT_EQ(BlockCount(4097, 4096), 2u);
  EXPECT_EQ(BlockLength(4097, 4096, 0), 4096u);
  EXPECT_EQ(BlockLength(4097, 4096, 1), 1u);
}

TEST(XferTuning, KeepsAutotuningWhenItSuffices) {
  KernelBufferLimits big{.wmem_max = 256u << 20,
                         .rmem_max = 256u << 20,
                         .tcp_wmem_max = 256u << 20,
                         .tcp_rmem_max = 256u << 20};
  TuningPlan p = PlanSender(2'000'000'000, 100000, 0, big);
  EXPECT_EQ(p.streams, 8);
  EXPECT_EQ(p.send_buffer, 0);
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.bdp_bytes, 25'000'000u);
  // Loopback: few streams.
  EXPECT_EQ(PlanSender(10'000'000'000, 50, 0, big).streams, 2);
}

TEST(XferTuning, AddsStreamsOrWarnsWithTheSysctl) {
  KernelBufferLimits small{.wmem_max = 4u << 20,
                           .rmem_max = 4u << 20,
                           .tcp_wmem_max = 4u << 20,
                           .tcp_rmem_max = 32u << 20};
  // 2 Gbit/s: 8 streams with explicit buffers (up to 2 x wmem_max) suffice.
  TuningPlan p = PlanSender(2'000'000'000, 100000, 0, small);
  EXPECT_EQ(p.streams, 8);
  EXPECT_GT(p.send_buffer, 0);
  EXPECT_TRUE(p.warnings.empty());
  // 10 Gbit/s: more streams.
  TuningPlan p10 = PlanSender(10'000'000'000, 100000, 0, small);
  EXPECT_EQ(p10.streams, 8);
  EXPECT_GT(p10.max_streams, 8);
  EXPECT_GT(p10.send_buffer, 0);
  EXPECT_FALSE(p10.notes.empty());
  TuningPlan fixed = PlanSender(2'000'000'000, 100000, 1, small);
  ASSERT_EQ(fixed.warnings.size(), 1u);
  EXPECT_NE(fixed.warnings[0].find("sysctl -w net.core.wmem_max=67108864 "
                                   "net.ipv4.tcp_wmem='4096 16384 67108864'"),
            std::string::npos)
      << fixed.warnings[0];
  auto rw = ReceiverBufferWarnings(10'000'000'000, 100000, 2, small);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_NE(rw[0].find("net.ipv4.tcp_rmem="), std::string::npos);
  EXPECT_TRUE(ReceiverBufferWarnings(1'000'000'000, 1000, 8, small).empty());
}

}  // namespace
}  // namespace ferry::xfer
