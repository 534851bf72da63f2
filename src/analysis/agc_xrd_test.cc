// The AGC analysis gives identical results — cut flows, every histogram's bins, means and
// digests — whether the files are read locally or through a real xrootd server (root://,
// XrdSource, vector reads over the XRootD protocol).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/agc_pass.h"
#include "testing/testing.h"
#include "testing/xrootd_server.h"
#include "xrd/open_source.h"

namespace ferry::analysis {
namespace {

Result<std::unique_ptr<io::ByteSource>> Open(const std::string& path_or_url) {
  return xrd::OpenSource(path_or_url);
}

void ExpectSameResult(const AgcReport& a, const AgcReport& b) {
  EXPECT_EQ(a.result.Digest(), b.result.Digest());
  for (Variation v : kVariations) {
    EXPECT_EQ(a.result.cutflow(v), b.result.cutflow(v)) << VariationName(v);
  }
  ASSERT_EQ(a.result.histograms().size(), b.result.histograms().size());
  for (size_t i = 0; i < a.result.histograms().size(); ++i) {
    const Histogram& ha = a.result.histograms()[i];
    const Histogram& hb = b.result.histograms()[i];
    SCOPED_TRACE(ha.name());
    EXPECT_EQ(ha.Digest(), hb.Digest());
    EXPECT_EQ(ha.Mean(), hb.Mean());  // exact: merges happen in the same order
    EXPECT_EQ(std::vector<double>(ha.contents().begin(), ha.contents().end()),
              std::vector<double>(hb.contents().begin(), hb.contents().end()));
  }
  EXPECT_EQ(a.stats.events, b.stats.events);
  EXPECT_EQ(a.stats.planned_bytes, b.stats.planned_bytes);
}

TEST(AgcOverXrootd, SameResultLocallyAndThroughAnOrigin) {
  FERRY_REQUIRE_ROOT_DATA();
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, testing::RootDataDir());
  // The ttbar file (baskets embedded in the TTree record) and nano_dy (baskets on disk: the
  // cluster reads go over the wire as XRootD vector reads), twice each.
  const std::vector<std::string> names = {"nanoAOD_2015_CMS_Open_Data_ttbar.root", "nano_dy.root",
                                          "nanoAOD_2015_CMS_Open_Data_ttbar.root", "nano_dy.root"};
  std::vector<std::string> local, remote;
  for (const std::string& n : names) {
    local.push_back(testing::RootDataFile(n));
    remote.push_back(origin->Url(n));
  }
  PassOptions options;
  options.threads = 3;
  options.reads_in_flight = 4;
  auto l = RunAgcPass(local, Open, options);
  ASSERT_TRUE(l.has_value()) << l.error().ToString();
  auto r = RunAgcPass(remote, Open, options);
  ASSERT_TRUE(r.has_value()) << r.error().ToString() << "\n" << origin->LogTail();
  ExpectSameResult(*l, *r);
  EXPECT_EQ(l->stats.events, 480u);
  EXPECT_GT(l->result.cutflow(Variation::kNominal).one_btag, 0u);
  // The same reads went to both kinds of source.
  EXPECT_EQ(r->stats.bytes_read, l->stats.bytes_read);
  EXPECT_EQ(r->stats.requests, l->stats.requests);
  EXPECT_EQ(r->stats.vector_reads, l->stats.vector_reads);
  EXPECT_GT(r->stats.vector_reads, 0u);

  // One thread, no read-ahead: still the same result.
  PassOptions serial;
  serial.threads = 1;
  serial.reads_in_flight = 0;
  auto s = RunAgcPass(remote, Open, serial);
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  ExpectSameResult(*l, *s);
}

TEST(AgcOverXrootd, MissingRemoteFileNamesTheUrl) {
  FERRY_REQUIRE_ROOT_DATA();
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, testing::RootDataDir());
  const std::vector<std::string> inputs = {origin->Url("no_such_file.root")};
  auto r = RunAgcPass(inputs, Open, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().ToString().find("no_such_file.root"), std::string::npos);
}

}  // namespace
}  // namespace ferry::analysis
