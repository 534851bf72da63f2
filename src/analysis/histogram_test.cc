#include "analysis/histogram.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace ferry::analysis {
namespace {

TEST(Histogram, BinsFlowsAndEdges) {
  Histogram h("h", 4, 0.0, 8.0);
  h.Fill(-1);                                        // underflow
  h.Fill(0);                                         // bin 1 (lower edge inclusive)
  h.Fill(1.99);                                      // bin 1
  h.Fill(2);                                         // bin 2
  h.Fill(7.999);                                     // bin 4
  h.Fill(8);                                         // overflow (upper edge exclusive)
  h.Fill(std::numeric_limits<double>::quiet_NaN());  // underflow
  ASSERT_EQ(h.contents().size(), 6u);
  EXPECT_EQ(h.underflow(), 2);
  EXPECT_EQ(h.contents()[1], 2);
  EXPECT_EQ(h.contents()[2], 1);
  EXPECT_EQ(h.contents()[3], 0);
  EXPECT_EQ(h.contents()[4], 1);
  EXPECT_EQ(h.overflow(), 1);
  EXPECT_EQ(h.entries(), 7u);
  EXPECT_EQ(h.Integral(), 4);
  EXPECT_DOUBLE_EQ(h.Mean(), (0 + 1.99 + 2 + 7.999) / 4);
  EXPECT_DOUBLE_EQ(h.BinLowEdge(1), 0);
  EXPECT_DOUBLE_EQ(h.BinLowEdge(5), 8);
}

TEST(Histogram, EmptyMeanIsZero) {
  Histogram h("h", 3, 1.0, 2.0);
  EXPECT_EQ(h.Mean(), 0);
  EXPECT_EQ(h.Integral(), 0);
}

TEST(Histogram, DigestIgnoresFillOrderAndSeesEveryBin) {
  const double xs[] = {1.5, 3.2, 3.3, 9.9, -4, 5.5, 12};
  Histogram a("a", 10, 0.0, 10.0);
  Histogram b("b", 10, 0.0, 10.0);
  for (double x : xs) {
    a.Fill(x);
  }
  for (int i = 6; i >= 0; --i) {
    b.Fill(xs[i]);
  }
  EXPECT_EQ(a.Digest(), b.Digest());
  // Merging halves gives the same contents too.
  Histogram c1("c", 10, 0.0, 10.0), c2("c", 10, 0.0, 10.0);
  for (int i = 0; i < 7; ++i) {
    (i % 2 == 0 ? c1 : c2).Fill(xs[i]);
  }
  c1.Merge(c2);
  EXPECT_EQ(c1.Digest(), a.Digest());
  EXPECT_EQ(c1.entries(), a.entries());
  // One more fill anywhere, including a flow bin, changes the digest.
  Histogram d = a;
  d.Fill(100);
  EXPECT_NE(d.Digest(), a.Digest());
  Histogram e = a;
  e.Fill(0.5);
  EXPECT_NE(e.Digest(), a.Digest());
  // Different binning, same fills: different digest.
  Histogram f("f", 5, 0.0, 10.0);
  for (double x : xs) {
    f.Fill(x);
  }
  EXPECT_NE(f.Digest(), a.Digest());
  EXPECT_FALSE(f.SameBinning(a));
}

TEST(Histogram, DigestHexIsSixteenDigits) {
  EXPECT_EQ(DigestHex(0), "0000000000000000");
  EXPECT_EQ(DigestHex(0xabcULL), "0000000000000abc");
}

}  // namespace
}  // namespace ferry::analysis
