#include "plugin/proxy/access_log.h"

#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace ferry::proxy {
namespace {

AccessRecord Sample() {
  AccessRecord r;
  r.path = "/store/data/f \"1\".root\n";
  r.user = "ferryc3";
  r.size = 123456789;
  r.open_unix = 1700000000.25;
  r.close_unix = 1700000010.5;
  r.reads = 42;
  r.bytes_read = 1000;
  r.bytes_hit = 600;
  r.bytes_missed = 300;
  r.bytes_bypassed = 100;
  r.bytes_prefetched = 77;
  r.origin_bytes = 420;
  r.origin_requests = 3;
  return r;
}

TEST(AccessLog, RecordRoundTrips) {
  const AccessRecord r = Sample();
  const std::string line = AccessRecordJson(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = ParseAccessRecord(line);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->path, r.path);
  EXPECT_EQ(back->user, r.user);
  EXPECT_EQ(back->size, r.size);
  EXPECT_DOUBLE_EQ(back->open_unix, r.open_unix);
  EXPECT_DOUBLE_EQ(back->close_unix, r.close_unix);
  EXPECT_EQ(back->reads, r.reads);
  EXPECT_EQ(back->bytes_hit, r.bytes_hit);
  EXPECT_EQ(back->bytes_missed, r.bytes_missed);
  EXPECT_EQ(back->bytes_bypassed, r.bytes_bypassed);
  EXPECT_EQ(back->bytes_prefetched, r.bytes_prefetched);
  EXPECT_EQ(back->origin_bytes, r.origin_bytes);
  EXPECT_EQ(back->origin_requests, r.origin_requests);
}

TEST(AccessLog, RejectsWhatItDidNotWrite) {
  for (const char* bad : {"", "{", "{\"size\":1}", "{\"path\":\"a\",}", "{\"path\":\"a\" x}",
                          "{\"path\":\"a\",\"size\":}", "[1]", "{\"path\":\"\\u12\"}"}) {
    EXPECT_FALSE(ParseAccessRecord(bad)) << bad;
  }
  EXPECT_TRUE(ParseAccessRecord("{\"path\":\"a\",\"future_key\":7}"));
  // Numbers no writer wrote: a count of 2^64 or more (converting it would be undefined), and
  // infinities (1e999 overflows to one).
  for (const char* bad : {"{\"path\":\"a\",\"size\":1e30}", "{\"path\":\"a\",\"reads\":1e999}",
                          "{\"path\":\"a\",\"open_unix\":-1e999}",
                          "{\"path\":\"a\",\"bytes_read\":18446744073709551616}"}) {
    auto r = ParseAccessRecord(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorruption);
  }
  auto big = ParseAccessRecord("{\"path\":\"a\",\"bytes_read\":18446744073709549568}");
  ASSERT_TRUE(big);  // the largest double below 2^64
  EXPECT_EQ(big->bytes_read, 18446744073709549568ull);
}

TEST(AccessLog, SummaryCountsRecordsFilesAndBadLines) {
  testing::TempDir dir;
  auto empty = SummariseAccessLog(dir.path());
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->records, 0u);
  // Concurrent appenders: every record lands whole.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        AccessRecord r = Sample();
        r.path = "/f" + std::to_string((t * 50 + i) % 10);
        ASSERT_TRUE(AppendAccessRecord(dir.path(), r));
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  {
    std::ofstream torn(dir.path() + "/access.jsonl", std::ios::app);
    torn << "{\"path\":\"/torn\",\"si";  // a crash in the middle of a line
  }
  auto s = SummariseAccessLog(dir.path());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->records, 200u);
  EXPECT_EQ(s->files, 10u);
  EXPECT_EQ(s->bad_lines, 1u);
  EXPECT_EQ(s->bytes_hit, 200u * 600);
  EXPECT_EQ(s->origin_requests, 200u * 3);
  EXPECT_DOUBLE_EQ(s->first_open_unix, 1700000000.25);
  EXPECT_DOUBLE_EQ(s->last_close_unix, 1700000010.5);
}

}  // namespace
}  // namespace ferry::proxy
