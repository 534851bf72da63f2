#include "gen/float_kernel.h"

#include <bit>
#include <cmath>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "gen/rng.h"

namespace ferry::gen {
namespace {

// A pool of n values of a log-normal "pt" above 15 (rounded to 10 mantissa bits, as NanoAOD
// stores jet pt).
std::vector<double> PtPool(size_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i) {
    const double u = (static_cast<double>(r.Below(1000000)) + 0.5) / 1e6;
    const float x = static_cast<float>(15.0 * std::exp(-0.6 * std::log(u)));
    const uint32_t b = (std::bit_cast<uint32_t>(x) + (1u << 12)) & ~((1u << 13) - 1);
    v.push_back(std::bit_cast<float>(b));
  }
  return v;
}

// Draws count values from pool with the kernel: each from a random pool index.
std::vector<float> Draw(const FloatKernel& k, const std::vector<double>& pool, size_t count) {
  Rng r(99);
  std::vector<float> values(count), widths(count);
  std::vector<uint32_t> noise(count + 1);
  for (size_t i = 0; i < count; ++i) {
    const size_t at = r.Below(pool.size());
    values[i] = static_cast<float>(k.centres.empty() ? pool[at] : k.centres[at]);
    widths[i] = k.widths.empty() ? 0.0f : k.widths[at];
  }
  FillNoiseWords(r, count, &noise);
  ApplyKernel(k, values.data(), widths.data(), noise.data(), count);
  return values;
}

int SignificantBits(float v) {
  const uint32_t m = std::bit_cast<uint32_t>(v) & 0x7FFFFF;
  return m == 0 ? 0 : 23 - std::countr_zero(m);
}

TEST(FloatKernel, DiscreteBranchesAreCopied) {
  std::vector<double> pool;
  for (int i = 0; i < 200; ++i) {
    pool.push_back(i % 7);  // a count stored as a float
  }
  EXPECT_EQ(FitKernel(pool, false, false).shape, FloatKernel::Shape::kCopy);
  EXPECT_EQ(FitKernel(std::vector<double>{3.5}, false, false).shape, FloatKernel::Shape::kCopy);
}

TEST(FloatKernel, PtLikeValuesStayAboveThresholdAtTheirPrecisionAndFillTheGaps) {
  const std::vector<double> pool = PtPool(300, 1);
  const FloatKernel k = FitKernel(pool, false, false);
  ASSERT_EQ(k.shape, FloatKernel::Shape::kScale);
  EXPECT_EQ(k.mantissa_bits, 10);
  double lo = 1e30;
  for (double v : pool) {
    lo = std::min(lo, v);
  }
  EXPECT_EQ(k.lo, lo);
  const std::vector<float> out = Draw(k, pool, 20000);
  std::set<float> distinct;
  for (float v : out) {
    EXPECT_GE(v, lo);  // reflected at the pool's threshold
    EXPECT_LE(SignificantBits(v), 10) << v;
    distinct.insert(v);
  }
  // Continuous: far more distinct values than the pool has.
  EXPECT_GT(distinct.size(), 5 * pool.size());
  // The spread is the pool's (the pull towards the mean compensates the kernel's width).
  auto log_sd = [](const auto& xs) {
    double m = 0, m2 = 0;
    for (double x : xs) {
      m += std::log(x);
      m2 += std::log(x) * std::log(x);
    }
    m /= static_cast<double>(xs.size());
    return std::sqrt(m2 / static_cast<double>(xs.size()) - m * m);
  };
  EXPECT_NEAR(log_sd(out), log_sd(pool), 0.05 * log_sd(pool));
}

TEST(FloatKernel, SentinelsAndZerosAreKeptAndScoresStayInRange) {
  // A b-tag: -10 for jets outside the tracker, 0 sometimes, a score in (0.05, 0.99) else.
  std::vector<double> pool;
  Rng r(3);
  for (int i = 0; i < 600; ++i) {
    if (i % 2 == 0) {
      pool.push_back(-10);
    } else if (i % 25 == 1) {
      pool.push_back(0);
    } else {
      pool.push_back(0.05 + 0.94 * static_cast<double>(r.Below(1024)) / 1024.0);
    }
  }
  const FloatKernel k = FitKernel(pool, false, false);
  ASSERT_EQ(k.shape, FloatKernel::Shape::kShift);
  ASSERT_GE(k.num_atoms, 1u);
  EXPECT_EQ(k.atoms[0], -10);
  size_t sentinels = 0;
  for (float v : Draw(k, pool, 20000)) {
    if (v == -10 || v == 0) {
      ++sentinels;
      continue;
    }
    EXPECT_GE(v, k.lo);
    EXPECT_LE(v, k.hi);
  }
  EXPECT_NEAR(static_cast<double>(sentinels) / 20000, 0.52, 0.03);
}

TEST(FloatKernel, AnglesWrapAround) {
  std::vector<double> pool;
  Rng r(5);
  for (int i = 0; i < 400; ++i) {
    pool.push_back(
        static_cast<float>(-3.14159 + 6.28318 * static_cast<double>(r.Below(4096)) / 4096));
  }
  EXPECT_TRUE(IsAngleName("Jet_phi"));
  EXPECT_TRUE(IsAngleName("PuppiMET_phiJERUp"));
  EXPECT_TRUE(IsAngleName("MET_fiducialGenPhi"));
  EXPECT_FALSE(IsAngleName("Photon_pt"));
  const FloatKernel k = FitKernel(pool, false, true);
  ASSERT_EQ(k.shape, FloatKernel::Shape::kAngle);
  for (float v : Draw(k, pool, 20000)) {
    EXPECT_LE(std::fabs(v), 3.1416f);
  }
}

TEST(FloatKernel, VectorisedAndOneByOneGiveTheSameBits) {
  // The loop runs 8 (AVX2) or 4 (SSE2) values at a time, with a scalar tail: all must agree.
  const std::vector<double> pool = PtPool(500, 7);
  const FloatKernel k = FitKernel(pool, false, false);
  Rng r(11);
  const size_t n = 1003;
  std::vector<float> values(n), widths(n);
  std::vector<uint32_t> noise(n + 1);
  for (size_t i = 0; i < n; ++i) {
    const size_t at = r.Below(pool.size());
    values[i] = static_cast<float>(k.centres[at]);
    widths[i] = k.widths[at];
  }
  FillNoiseWords(r, n, &noise);
  std::vector<float> one = values;
  ApplyKernel(k, values.data(), widths.data(), noise.data(), n);
  for (size_t i = 0; i < n; ++i) {
    ApplyKernel(k, &one[i], &widths[i], &noise[i], 1);
    ASSERT_EQ(std::bit_cast<uint32_t>(one[i]), std::bit_cast<uint32_t>(values[i])) << i;
  }
}

TEST(FloatKernel, DoublesFollowTheSameRules) {
  std::vector<double> pool;
  for (double v : PtPool(300, 2)) {
    pool.push_back(v * (1 + 1e-9));  // full double precision
  }
  const FloatKernel k = FitKernel(pool, true, false);
  ASSERT_EQ(k.shape, FloatKernel::Shape::kScale);
  Rng r(4);
  std::vector<double> values(1000);
  std::vector<float> widths(1000);
  std::vector<uint32_t> noise;
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t at = r.Below(pool.size());
    values[i] = k.centres[at];
    widths[i] = k.widths[at];
  }
  FillNoiseWords(r, values.size(), &noise);
  ApplyKernel(k, values.data(), widths.data(), noise.data(), values.size());
  for (double v : values) {
    EXPECT_GE(v, k.lo);
    EXPECT_TRUE(std::isfinite(v));
  }
}

}  // namespace
}  // namespace ferry::gen
