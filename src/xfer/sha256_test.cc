#include "xfer/sha256.h"

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ferry::xfer {
namespace {

std::string Hex(const Result<Digest256>& r) {
  EXPECT_TRUE(r.has_value());
  if (!r) {
    return r.error().ToString();
  }
  const Digest256& d = *r;
  std::string s;
  char buf[3];
  for (uint8_t b : d) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    s += buf;
  }
  return s;
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// FIPS 180-4 examples.
TEST(XferSha256, KnownVectors) {
  EXPECT_EQ(Hex(Sha256Of(Bytes(""))),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hex(Sha256Of(Bytes("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(Sha256Of(Bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(Hex(Sha256Of(Bytes(million))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// The handshake MACs several parts; the result must equal the MAC of their concatenation,
// however the bytes are split (empty parts included).
TEST(XferHmacSha256, PartsEqualTheirConcatenation) {
  std::string text(1000, 'x');
  for (size_t i = 0; i < text.size(); ++i) {
    text[i] = static_cast<char>('a' + i % 26);
  }
  const std::string key = "k";
  const std::span<const uint8_t> whole[] = {Bytes(text)};
  const std::string one_shot = Hex(HmacSha256(Bytes(key), whole));
  for (size_t split : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 127u, 999u, 1000u}) {
    const std::span<const uint8_t> all = Bytes(text);
    const std::span<const uint8_t> parts[] = {all.first(split), {}, all.subspan(split)};
    EXPECT_EQ(Hex(HmacSha256(Bytes(key), parts)), one_shot) << split;
  }
  // An empty key is a key: different from "k", still a valid MAC.
  EXPECT_NE(Hex(HmacSha256({}, whole)), one_shot);
}

// RFC 4231 test cases 1, 2 and 6 (key longer than the block).
TEST(XferHmacSha256, Rfc4231) {
  std::vector<uint8_t> key1(20, 0x0b);
  std::string data1 = "Hi There";
  const std::span<const uint8_t> p1[] = {Bytes(data1)};
  EXPECT_EQ(Hex(HmacSha256(key1, p1)),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

  std::string key2 = "Jefe";
  std::string data2a = "what do ya want ";
  std::string data2b = "for nothing?";
  const std::span<const uint8_t> p2[] = {Bytes(data2a), Bytes(data2b)};
  EXPECT_EQ(Hex(HmacSha256(Bytes(key2), p2)),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

  std::vector<uint8_t> key6(131, 0xaa);
  std::string data6 = "Test Using Larger Than Block-Size Key - Hash Key First";
  const std::span<const uint8_t> p6[] = {Bytes(data6)};
  EXPECT_EQ(Hex(HmacSha256(key6, p6)),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(XferHmacSha256, MacEqual) {
  Digest256 a{};
  Digest256 b{};
  EXPECT_TRUE(MacEqual(a, b));
  b[31] = 1;
  EXPECT_FALSE(MacEqual(a, b));
}

TEST(XferRandomBytes, Fills) {
  std::array<uint8_t, 32> a{};
  std::array<uint8_t, 32> b{};
  ASSERT_TRUE(RandomBytes(a).has_value());
  ASSERT_TRUE(RandomBytes(b).has_value());
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace ferry::xfer
