// RunAgcPass with many threads and reads in flight: deterministic results (merged in unit
// order), equal to the merge of single-threaded passes; errors name the input. Label
// concurrency (run under ThreadSanitizer).
#include "analysis/agc_pass.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/local_source.h"
#include "testing/testing.h"

namespace ferry::analysis {
namespace {

Result<std::unique_ptr<io::ByteSource>> OpenLocalFile(const std::string& path) {
  return io::OpenLocal(path);
}

TEST(AgcPass, TtbarFileGivesTheSameResultWithAnyThreadCount) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::vector<std::string> inputs = {
      testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root")};
  PassOptions one;
  one.threads = 1;
  one.reads_in_flight = 0;
  auto a = RunAgcPass(inputs, OpenLocalFile, one);
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->stats.events, 200u);
  EXPECT_EQ(a->result.cutflow(Variation::kNominal).events, 200u);
  EXPECT_GT(a->result.cutflow(Variation::kNominal).one_btag, 0u);
  EXPECT_GT(a->stats.bytes_read, 0u);
  EXPECT_LE(a->stats.bytes_read, a->stats.dataset_bytes);

  // ttbar (embedded baskets) and nano_dy (baskets on disk: concurrent vector reads) over four
  // threads and three reads in flight: deterministic, and equal to merging single passes.
  const std::vector<std::string> dy = {testing::RootDataFile("nano_dy.root")};
  auto a_dy = RunAgcPass(dy, OpenLocalFile, one);
  ASSERT_TRUE(a_dy.has_value()) << a_dy.error().ToString();
  const std::vector<std::string> three = {inputs[0], dy[0], inputs[0]};
  PassOptions many;
  many.threads = 4;
  many.reads_in_flight = 3;
  auto b = RunAgcPass(three, OpenLocalFile, many);
  ASSERT_TRUE(b.has_value()) << b.error().ToString();
  auto c = RunAgcPass(three, OpenLocalFile, many);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(b->result.Digest(), c->result.Digest());
  // Opening the inputs one after another (a TChain's order) changes nothing but the time.
  PassOptions serial = one;
  serial.opens_in_flight = 1;
  auto e = RunAgcPass(three, OpenLocalFile, serial);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_EQ(b->result.Digest(), e->result.Digest());
  AgcResult triple = a->result;
  triple.Merge(a_dy->result);
  triple.Merge(a->result);
  EXPECT_EQ(b->result.Digest(), triple.Digest());
  for (size_t i = 0; i < triple.histograms().size(); ++i) {
    EXPECT_DOUBLE_EQ(b->result.histograms()[i].Mean(), triple.histograms()[i].Mean());
  }
  EXPECT_EQ(b->stats.events, 440u);
  EXPECT_GT(b->stats.vector_reads, 0u);
  EXPECT_EQ(b->stats.files, 3u);
  EXPECT_NE(AgcReportJson(*b).find("\"digest\""), std::string::npos);

  // A missing input is an error naming it.
  const std::vector<std::string> missing = {inputs[0], "/nonexistent/ferry.root"};
  auto d = RunAgcPass(missing, OpenLocalFile, many);
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().ToString().find("/nonexistent/ferry.root"), std::string::npos);
}

}  // namespace
}  // namespace ferry::analysis
