#include "base/byte_plane.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace ferry {
namespace {

constexpr ByteIsa kIsas[] = {ByteIsa::kScalar, ByteIsa::kSse2, ByteIsa::kAvx2};

// Every width 1..16, counts around the kernels' 16- and 32-value blocks, with and without a
// stride larger than the count, for every instruction set: split against the definition,
// unsplit back to the input.
TEST(BytePlane, EveryIsaMatchesTheDefinition) {
  std::mt19937 rng(7);
  for (size_t w = 1; w <= 16; ++w) {
    for (size_t n : {0UL, 1UL, 15UL, 16UL, 17UL, 31UL, 32UL, 33UL, 47UL, 63UL, 64UL, 65UL, 100UL,
                     1000UL, 4099UL}) {
      for (size_t pad : {0UL, 5UL}) {
        const size_t stride = n + pad;
        std::vector<uint8_t> values(n * w);
        for (uint8_t& b : values) {
          b = static_cast<uint8_t>(rng());
        }
        std::vector<uint8_t> want(stride * w, 0xEE);
        for (size_t i = 0; i < n; ++i) {
          for (size_t b = 0; b < w; ++b) {
            want[b * stride + i] = values[i * w + b];
          }
        }
        for (ByteIsa isa : kIsas) {
          SCOPED_TRACE(testing::Message()
                       << ByteIsaName(isa) << " w=" << w << " n=" << n << " stride=" << stride);
          std::vector<uint8_t> planes(stride * w, 0xEE);
          SplitBytesWith(isa, values.data(), n, w, planes.data(), stride);
          EXPECT_EQ(planes, want);
          std::vector<uint8_t> back(n * w);
          UnsplitBytesWith(isa, planes.data(), stride, n, w, back.data());
          EXPECT_EQ(back, values);
        }
      }
    }
  }
}

// A pick gathers values [first, first + count) of a longer split array.
TEST(BytePlane, UnsplitGathersARangeOfALongerArray) {
  const size_t n = 200;
  const size_t w = 8;
  std::vector<uint8_t> values(n * w);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<uint8_t>(i * 31 + 7);
  }
  std::vector<uint8_t> planes(n * w);
  SplitBytes(values.data(), n, w, planes.data());
  for (size_t first : {0UL, 3UL, 64UL, 150UL}) {
    for (size_t count : {1UL, 16UL, 33UL, 50UL}) {
      std::vector<uint8_t> got(count * w);
      UnsplitBytes(planes.data() + first, n, count, w, got.data());
      EXPECT_TRUE(std::equal(got.begin(), got.end(),
                             values.begin() + static_cast<std::ptrdiff_t>(first * w)))
          << first << " " << count;
    }
  }
}

TEST(BytePlane, BestIsaIsOneThisCpuRuns) {
  const ByteIsa best = BestByteIsa();
#if defined(__x86_64__)
  EXPECT_NE(best, ByteIsa::kScalar);
#endif
  EXPECT_STRNE(ByteIsaName(best), "");
}

}  // namespace
}  // namespace ferry
