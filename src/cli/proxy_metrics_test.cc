#include "cli/proxy_metrics.h"

#include <sstream>

#include <gtest/gtest.h>

namespace ferry::cli {
namespace {

TEST(ProxyMetrics, NumericFieldsOfTheStatusFile) {
  auto f =
      NumericFields(R"({"pid":12,"origin":"h:1","started_unix":1700000000,"open_files":0,)"
                    R"("origin_inflight_seconds":2.5,"note":"a \"quoted\", value","opens":7})");
  EXPECT_EQ(f.size(), 5u);
  EXPECT_EQ(f["pid"], 12);
  EXPECT_EQ(f["open_files"], 0);
  EXPECT_EQ(f["origin_inflight_seconds"], 2.5);
  EXPECT_EQ(f["opens"], 7);
  EXPECT_EQ(f.count("origin"), 0u);
  EXPECT_TRUE(NumericFields("").empty());
  EXPECT_TRUE(NumericFields("{\"a\":").empty());
  EXPECT_TRUE(NumericFields("{\"a\" 1}").empty());
}

TEST(ProxyMetrics, ExpositionFormat) {
  MetricsInput in;
  in.counters[static_cast<size_t>(cache::Counter::kHits)] = 12345678901ULL;
  in.entries = 3;
  in.free_bytes = 1ULL << 40;
  in.status = {{"open_files", 2},
               {"origin_inflight_seconds", 0.25},
               {"origin_handles_reused", 9},
               {"unknown", 1}};
  in.proxy_up = true;
  const std::string text = PrometheusText(in);
  EXPECT_NE(text.find("\nferry_cache_hits_total 12345678901\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE ferry_cache_hits_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("\nferry_cache_entries 3\n"), std::string::npos);
  EXPECT_NE(text.find("\nferry_cache_free_bytes 1099511627776\n"), std::string::npos);
  EXPECT_NE(text.find("\nferry_proxy_up 1\n"), std::string::npos);
  EXPECT_NE(text.find("\nferry_proxy_open_files 2\n"), std::string::npos);
  EXPECT_NE(text.find("\nferry_proxy_origin_inflight_seconds_total 0.25\n"), std::string::npos);
  EXPECT_NE(text.find("\nferry_proxy_origin_handles_reused_total 9\n"), std::string::npos);
  EXPECT_EQ(text.find("unknown"), std::string::npos);
  EXPECT_EQ(text.find("ferry_proxy_opens_total"), std::string::npos);  // not in the status
  // Every sample follows its HELP and TYPE lines; names are valid Prometheus names.
  std::istringstream lines(text);
  std::string help;
  std::string type;
  std::string sample;
  while (std::getline(lines, help) && std::getline(lines, type) && std::getline(lines, sample)) {
    const std::string name = sample.substr(0, sample.find(' '));
    EXPECT_EQ(help.rfind("# HELP " + name + " ", 0), 0u) << help;
    EXPECT_EQ(type.rfind("# TYPE " + name + " ", 0), 0u) << type;
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789"), std::string::npos);
  }
}

TEST(ProxyMetrics, OneLabelledSamplePerOriginGate) {
  const std::string status =
      R"({"pid":1,"open_files":0,"origins":[{"origin":"a:1094","in_flight":2,"waited":5,)"
      R"("turned_away":3,"unanswered":1},{"origin":"b:2094","in_flight":0,"waited":0,)"
      R"("turned_away":0,"unanswered":0}],"opens":4})";
  MetricsInput in;
  in.status = NumericFields(status);
  in.origins = OriginFields(status);
  ASSERT_EQ(in.origins.size(), 2u);
  EXPECT_EQ(in.origins["a:1094"]["turned_away"], 3);
  EXPECT_EQ(in.status["opens"], 4);  // the fields after the array are still read
  const std::string text = PrometheusText(in);
  EXPECT_NE(text.find("\nferry_proxy_origin_gate_turned_away_total{origin=\"a:1094\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nferry_proxy_origin_unanswered_total{origin=\"b:2094\"} 0\n"),
            std::string::npos);
  // One HELP and one TYPE line per metric, however many origins.
  EXPECT_EQ(text.find("# TYPE ferry_proxy_origin_gate_in_flight gauge"),
            text.rfind("# TYPE ferry_proxy_origin_gate_in_flight gauge"));
  EXPECT_TRUE(OriginFields(R"({"origins":[)").empty());
  EXPECT_TRUE(OriginFields(R"({"pid":1})").empty());
}

TEST(ProxyMetrics, OneLabelledSamplePerCacheDisk) {
  // Reasons are free text: brackets, braces and quotes inside them do not end the objects.
  const std::string status =
      R"({"pid":1,"origins":[{"origin":"a:1094","in_flight":0}],"disks_up":1,"disks":[)"
      R"({"dir":"/d0","up":1,"reason":"","faults":0,"open":2,"free_inodes":50},)"
      R"({"dir":"/d1","up":0,"reason":"pread [x]: {\"EIO\"}, gone","faults":3,"open":0}]})";
  MetricsInput in;
  in.status = NumericFields(status);
  in.disks = ArrayObjects(status, "disks", "dir");
  ASSERT_EQ(in.disks.size(), 2u);
  EXPECT_EQ(in.disks["/d1"]["faults"], 3);
  EXPECT_EQ(in.disks["/d0"]["open"], 2);
  const std::string text = PrometheusText(in);
  EXPECT_NE(text.find("\nferry_proxy_disk_up{dir=\"/d0\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nferry_proxy_disk_up{dir=\"/d1\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("\nferry_proxy_disk_faults_total{dir=\"/d1\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("\nferry_proxy_disks_up 1\n"), std::string::npos);
  EXPECT_EQ(text.find("# TYPE ferry_proxy_disk_up gauge"),
            text.rfind("# TYPE ferry_proxy_disk_up gauge"));
}

}  // namespace
}  // namespace ferry::cli
