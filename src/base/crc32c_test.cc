#include "base/crc32c.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace ferry {
namespace {

TEST(Crc32c, StandardCheckValue) {
  // CRC-32C check value from RFC 3720 / the Castagnoli catalogue.
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c::Value("", 0), 0u);
}

TEST(Crc32c, Rfc3720Vectors) {
  uint8_t zeros[32] = {};
  EXPECT_EQ(crc32c::Value(zeros, 32), 0x8A9136AAu);
  uint8_t ones[32];
  std::memset(ones, 0xFF, sizeof ones);
  EXPECT_EQ(crc32c::Value(ones, 32), 0x62A8AB43u);
  uint8_t inc[32];
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<uint8_t>(i);
  }
  EXPECT_EQ(crc32c::Value(inc, 32), 0x46DD794Eu);
}

TEST(Crc32c, ExtendEqualsWholeForAnySplit) {
  auto data = testing::PseudoRandomBytes(4099, 3);
  uint32_t whole = crc32c::Value(data);
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{4096}, data.size()}) {
    uint32_t c = crc32c::Extend(0, data.data(), split);
    c = crc32c::Extend(c, data.data() + split, data.size() - split);
    EXPECT_EQ(c, whole) << "split " << split;
  }
}

TEST(Crc32c, DetectsSingleBitFlip) {
  auto data = testing::PseudoRandomBytes(4096, 9);
  uint32_t before = crc32c::Value(data);
  data[1234] ^= 0x10;
  EXPECT_NE(crc32c::Value(data), before);
}

}  // namespace
}  // namespace ferry
