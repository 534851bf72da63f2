#include "gen/event_resampler.h"

#include <bit>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace ferry::gen {
namespace {

int UnusedMantissaBits(float v) {
  uint32_t m = std::bit_cast<uint32_t>(v) & 0x7FFFFF;
  return m == 0 ? 23 : std::countr_zero(m);
}

TEST(Perturb, KeepsPrecisionAndStaysClose) {
  const float values[] = {17.921875f, 1.25f, -2.3456789f, 0.0078125f, 1234.5f, 3.0e-20f};
  for (float v : values) {
    for (double noise : {-1.0, -0.3, 0.0, 0.5, 0.999}) {
      float p = PerturbFloat(v, noise);
      EXPECT_LE(std::fabs(p - v),
                std::fabs(v) * 0.021 + std::ldexp(std::fabs(v), -(23 - UnusedMantissaBits(v))))
          << v;
      EXPECT_GE(UnusedMantissaBits(p), std::min(UnusedMantissaBits(v), 22)) << v << " -> " << p;
    }
  }
}

TEST(Perturb, SpecialValuesUnchanged) {
  EXPECT_EQ(PerturbFloat(0.0f, 0.7), 0.0f);
  EXPECT_TRUE(std::isnan(PerturbFloat(std::numeric_limits<float>::quiet_NaN(), 0.7)));
  EXPECT_EQ(PerturbFloat(std::numeric_limits<float>::infinity(), 0.7),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(PerturbDouble(0.0, 0.7), 0.0);
  EXPECT_NEAR(PerturbDouble(100.0, 0.5), 101.0, 1.0);
}

TEST(EventResampler, WholeEventsConsistentWithCountersAndDeterministic) {
  FERRY_REQUIRE_ROOT_DATA();
  auto tmpl = LoadTemplate(testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root"));
  ASSERT_TRUE(tmpl.has_value()) << tmpl.error().ToString();
  EXPECT_EQ(tmpl->entries, 200);
  EXPECT_EQ(tmpl->branches.size(), 947u);
  EXPECT_TRUE(tmpl->skipped.empty());
  ASSERT_GE(tmpl->run, 0);
  ASSERT_GE(tmpl->lumi, 0);
  ASSERT_GE(tmpl->event, 0);
  auto batch = [&](uint64_t seed) {
    EventResampler r(*tmpl, seed);
    EventIdSequence ids(seed);
    std::vector<rootio::Column> cols;
    r.NextBatch(300, ids, &cols);
    r.NextBatch(250, ids, &cols);
    return cols;
  };
  std::vector<rootio::Column> a = batch(9), b = batch(9), c = batch(10);
  ASSERT_EQ(a.size(), tmpl->branches.size());
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].bytes, b[i].bytes) << tmpl->branches[i].spec.name;
    ASSERT_EQ(a[i].offsets, b[i].offsets);
    ASSERT_EQ(a[i].num_entries, 250);
    differs = differs || a[i].bytes != c[i].bytes;
    const rootwrite::BranchSpec& s = tmpl->branches[i].spec;
    if (!s.count.empty()) {
      const rootio::Column& cnt = a[static_cast<size_t>(tmpl->Find(s.count))];
      for (int64_t e = 0; e < 250; ++e) {
        auto [lo, hi] = a[i].EntryValues(e);
        ASSERT_EQ(hi - lo, cnt.AsUint64(static_cast<size_t>(e)) * static_cast<uint64_t>(s.len))
            << s.name;
      }
    }
  }
  EXPECT_TRUE(differs);
  // Integer branches take values of whole template events: nJet values are template values.
  const rootio::Column& njet = a[static_cast<size_t>(tmpl->Find("nJet"))];
  const rootio::Column& tnjet = tmpl->branches[static_cast<size_t>(tmpl->Find("nJet"))].values;
  for (int64_t e = 0; e < 250; ++e) {
    uint64_t v = njet.AsUint64(static_cast<size_t>(e));
    bool found = false;
    for (int64_t t = 0; t < tmpl->entries && !found; ++t) {
      found = tnjet.AsUint64(static_cast<size_t>(t)) == v;
    }
    ASSERT_TRUE(found);
  }
}

}  // namespace
}  // namespace ferry::gen
