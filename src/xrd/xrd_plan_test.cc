#include <vector>

#include <gtest/gtest.h>

#include "xrd/xrd_source.h"

namespace ferry::xrd {
namespace {

TEST(RedactUrl, DropsCredentialsAndQuery) {
  EXPECT_EQ(RedactUrl("root://u:pw@host:1094//a/b.root?authz=secret&x=1"),
            "root://host:1094//a/b.root");
  EXPECT_EQ(RedactUrl("root://host//a@b.root"), "root://host//a@b.root");
  EXPECT_EQ(RedactUrl("root://host:1094//a"), "root://host:1094//a");
  EXPECT_EQ(RedactUrl("plain/path?x"), "plain/path");
}

TEST(PlanVectorRead, SplitsLargeRangesAndCapsChunksPerRequest) {
  std::vector<uint8_t> a(10), b(25), c(0), d(3);
  std::vector<io::ReadRequest> reqs = {{100, a, {}}, {1000, b, {}}, {5, c, {}}, {7, d, {}}};
  auto plan = PlanVectorRead(reqs, 10, 3);
  // a -> 1 chunk, b -> 3 chunks (10, 10, 5), c -> none, d -> 1 chunk: 5 chunks in 2 batches.
  ASSERT_EQ(plan.size(), 2u);
  ASSERT_EQ(plan[0].size(), 3u);
  ASSERT_EQ(plan[1].size(), 2u);
  EXPECT_EQ(plan[0][0].offset, 100u);
  EXPECT_EQ(plan[0][0].length, 10u);
  EXPECT_EQ(plan[0][1].offset, 1000u);
  EXPECT_EQ(plan[0][2].offset, 1010u);
  EXPECT_EQ(plan[0][2].dest_offset, 10u);
  EXPECT_EQ(plan[1][0].offset, 1020u);
  EXPECT_EQ(plan[1][0].length, 5u);
  EXPECT_EQ(plan[1][0].request, 1u);
  EXPECT_EQ(plan[1][1].request, 3u);
  uint64_t total = 0;
  for (const auto& batch : plan) {
    for (const auto& ch : batch) {
      total += ch.length;
    }
  }
  EXPECT_EQ(total, 38u);
}

TEST(PlanVectorRead, DefaultLimitsMatchTheProtocol) {
  XrdSourceOptions o;
  EXPECT_EQ(o.max_chunks_per_request, 1024u);
  EXPECT_EQ(o.max_chunk_bytes, 2097136u);
  std::vector<std::vector<uint8_t>> bufs(2049, std::vector<uint8_t>(1));
  std::vector<io::ReadRequest> reqs;
  for (size_t i = 0; i < bufs.size(); ++i) {
    reqs.push_back({i * 10, bufs[i], {}});
  }
  auto plan = PlanVectorRead(reqs, o.max_chunk_bytes, o.max_chunks_per_request);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].size(), 1024u);
  EXPECT_EQ(plan[2].size(), 1u);
}

}  // namespace
}  // namespace ferry::xrd
