#include "cache/page_crc.h"

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

TEST(PageCrcTest, SameValuesAsCrc32c) {
  const auto data = testing::PseudoRandomBytes(70000, 5);
  for (size_t n : {0u, 1u, 7u, 8u, 383u, 384u, 385u, 4031u, 4032u, 4033u, 4096u, 8192u, 12345u,
                   65536u, 70000u}) {
    EXPECT_EQ(PageCrc(data.data(), n), crc32c::Value(data.data(), n)) << n;
    EXPECT_EQ(PageCrc(data.data() + 3, n - (n > 3 ? 3 : n)),
              crc32c::Value(data.data() + 3, n - (n > 3 ? 3 : n)))
        << "unaligned " << n;
  }
  for (size_t n = 0; n < 5000; n += 37) {
    ASSERT_EQ(PageCrc(data.data() + n % 11, n), crc32c::Value(data.data() + n % 11, n)) << n;
  }
  EXPECT_EQ(PageCrc("123456789", 9), 0xE3069283u);  // the CRC-32C check value
}

}  // namespace
}  // namespace ferry::cache
