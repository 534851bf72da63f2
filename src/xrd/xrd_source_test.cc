// Integration tests: XrdSource against a real xrootd origin on 127.0.0.1.
#include "xrd/xrd_source.h"

#include <cerrno>
#include <cstdlib>
#include <random>
#include <vector>

#include <XrdCl/XrdClDefaultEnv.hh>
#include <gtest/gtest.h>

#include "testing/testing.h"
#include "testing/xrootd_server.h"
#include "xrd/open_source.h"

namespace ferry::xrd {
namespace {

constexpr size_t kFileSize = (5u << 20) + 12345;  // > 2 chunks of XRootD's readv maximum

class XrdSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = testing::PseudoRandomBytes(kFileSize, 11);
    testing::WriteWholeFile(dir_.File("data.bin"), bytes_);
  }
  testing::TempDir dir_;
  std::vector<uint8_t> bytes_;
};

TEST_F(XrdSourceTest, OpenReportsSizeAndRedactedName) {
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, dir_.path());
  auto src = XrdSource::Open(origin->Url("data.bin") + "?authz=token");
  ASSERT_TRUE(src.has_value()) << src.error().ToString() << "\n" << origin->LogTail();
  EXPECT_EQ((*src)->size(), kFileSize);
  EXPECT_EQ((*src)->name(), origin->Url("data.bin"));
}

TEST_F(XrdSourceTest, ReadAtMatchesTheFileAndSplitsLargeReads) {
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, dir_.path());
  XrdSourceOptions opt;
  opt.max_read_bytes = 1u << 20;
  auto src = XrdSource::Open(origin->Url("data.bin"), opt);
  ASSERT_TRUE(src.has_value()) << src.error().ToString();
  io::ByteSource& s = **src;

  std::vector<uint8_t> all(kFileSize);
  ASSERT_TRUE(s.ReadAt(0, all).has_value());
  EXPECT_EQ(all, bytes_);
  EXPECT_EQ((*src)->wire_stats().read_requests, 6u);  // 5 MiB + 12345 in 1 MiB pieces

  std::vector<uint8_t> tail(100);
  ASSERT_TRUE(s.ReadAt(kFileSize - 100, tail).has_value());
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), bytes_.end() - 100));

  auto past = s.ReadAt(kFileSize - 10, tail);
  ASSERT_FALSE(past.has_value());
  EXPECT_EQ(past.error().code(), ErrorCode::kShortRead);

  const io::IoStats st = s.stats();
  EXPECT_EQ(st.read_calls, 3u);
  EXPECT_EQ(st.bytes, kFileSize + 100);
}

TEST_F(XrdSourceTest, ReadVReturnsExactBytesForManyRanges) {
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, dir_.path());
  auto src = XrdSource::Open(origin->Url("data.bin"));
  ASSERT_TRUE(src.has_value()) << src.error().ToString();

  // 2500 small scattered ranges (overlaps allowed), one 4.5 MiB range (3 chunks) and one empty.
  std::mt19937_64 rng(5);
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<uint64_t> offsets;
  for (int i = 0; i < 2500; ++i) {
    size_t len = 1 + rng() % 20000;
    offsets.push_back(rng() % (kFileSize - len));
    bufs.emplace_back(len);
  }
  offsets.push_back(100);
  bufs.emplace_back((4u << 20) + (1u << 19));
  offsets.push_back(7);
  bufs.emplace_back(0);
  std::vector<io::ReadRequest> reqs;
  for (size_t i = 0; i < bufs.size(); ++i) {
    reqs.push_back({offsets[i], bufs[i], {}});
  }
  Status st = (*src)->ReadV(reqs);
  ASSERT_TRUE(st.has_value()) << st.error().ToString();
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(reqs[i].status.has_value()) << i;
    ASSERT_TRUE(
        std::equal(bufs[i].begin(), bufs[i].end(), bytes_.begin() + static_cast<long>(offsets[i])))
        << "range " << i << " at " << offsets[i];
  }
  // 2500 + 3 chunks -> 3 vector requests of at most 1024 chunks.
  const XrdWireStats w = (*src)->wire_stats();
  EXPECT_EQ(w.vector_requests, 3u);
  EXPECT_EQ(w.vector_chunks, 2503u);
  EXPECT_EQ(w.read_requests, 0u);
  const io::IoStats s = (*src)->stats();
  EXPECT_EQ(s.vector_calls, 1u);
  EXPECT_EQ(s.chunks, reqs.size());
}

TEST_F(XrdSourceTest, ReadVWithSmallLimitsAndAPastTheEndRange) {
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, dir_.path());
  XrdSourceOptions opt;
  opt.max_chunk_bytes = 1000;
  opt.max_chunks_per_request = 7;
  opt.max_requests_in_flight = 2;
  auto src = XrdSource::Open(origin->Url("data.bin"), opt);
  ASSERT_TRUE(src.has_value()) << src.error().ToString();
  std::vector<uint8_t> a(5500), b(10), c(10);
  std::vector<io::ReadRequest> reqs = {{1, a, {}}, {kFileSize - 5, b, {}}, {4096, c, {}}};
  Status st = (*src)->ReadV(reqs);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kShortRead);
  EXPECT_TRUE(reqs[0].status.has_value());
  EXPECT_FALSE(reqs[1].status.has_value());
  EXPECT_TRUE(reqs[2].status.has_value());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), bytes_.begin() + 1));
  EXPECT_TRUE(std::equal(c.begin(), c.end(), bytes_.begin() + 4096));

  // All ranges valid: 6 + 1 chunks, exactly one request of 7.
  std::vector<io::ReadRequest> ok = {{1, a, {}}, {4096, c, {}}};
  ASSERT_TRUE((*src)->ReadV(ok).has_value());
  const XrdWireStats before = (*src)->wire_stats();
  std::vector<uint8_t> big(7001);
  std::vector<io::ReadRequest> split = {{0, big, {}}};
  ASSERT_TRUE((*src)->ReadV(split).has_value());
  EXPECT_EQ((*src)->wire_stats().vector_requests - before.vector_requests, 2u);  // 8 chunks
  EXPECT_TRUE(std::equal(big.begin(), big.end(), bytes_.begin()));
}

TEST_F(XrdSourceTest, MissingFileIsARemoteErrorWithErrno) {
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, dir_.path());
  auto src = XrdSource::Open(origin->Url("nope.bin"));
  ASSERT_FALSE(src.has_value());
  EXPECT_EQ(src.error().code(), ErrorCode::kRemote);
  EXPECT_EQ(src.error().sys_errno(), ENOENT);
  EXPECT_NE(src.error().message().find("nope.bin"), std::string::npos);
}

TEST_F(XrdSourceTest, OpenSourceDispatchesRootUrls) {
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, dir_.path());
  auto src = OpenSource(origin->Url("data.bin"));
  ASSERT_TRUE(src.has_value()) << src.error().ToString();
  EXPECT_NE(dynamic_cast<XrdSource*>(src->get()), nullptr);
  std::vector<uint8_t> head(64);
  ASSERT_TRUE((*src)->ReadAt(0, head).has_value());
  EXPECT_TRUE(std::equal(head.begin(), head.end(), bytes_.begin()));
}

TEST_F(XrdSourceTest, ServerGoneFailsEveryRangeWithinTheTimeout) {
  // Make XrdCl give up quickly. The post-master reads these when it starts (on the first
  // open), and ctest runs each test in its own process.
  XrdCl::Env* env = XrdCl::DefaultEnv::GetEnv();
  env->PutInt("TimeoutResolution", 1);
  env->PutInt("ConnectionRetry", 1);
  env->PutInt("StreamErrorWindow", 0);
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, dir_.path());
  XrdSourceOptions opt;
  opt.timeout_seconds = 3;
  auto src = XrdSource::Open(origin->Url("data.bin"), opt);
  ASSERT_TRUE(src.has_value()) << src.error().ToString();
  origin->Stop();
  std::vector<uint8_t> a(10), b(10);
  std::vector<io::ReadRequest> reqs = {{0, a, {}}, {5000, b, {}}};
  Status st = (*src)->ReadV(reqs);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kRemote);
  EXPECT_FALSE(reqs[0].status.has_value());
  EXPECT_FALSE(reqs[1].status.has_value());
  auto one = (*src)->ReadAt(0, a);
  ASSERT_FALSE(one.has_value());
  EXPECT_EQ(one.error().code(), ErrorCode::kRemote);
}

}  // namespace
}  // namespace ferry::xrd

namespace ferry::xrd {
namespace {

// The same reads through the emulated WAN (scripts/testbed/wan.sh): an origin inside a
// namespace behind 20 ms RTT. Checks bytes and request counts, never time.
TEST(XrdSourceWan, VectorReadThroughTheWanNamespace) {
  testing::TempDir dir;
  const std::vector<uint8_t> bytes = testing::PseudoRandomBytes(1u << 20, 4);
  testing::WriteWholeFile(dir.File("w.bin"), bytes);
  testing::TestbedWanStart w = testing::TestbedWan::Up("20ms", "500mbit");
  if (w.unavailable) {
    GTEST_SKIP() << w.message;
  }
  ASSERT_TRUE(w.wan != nullptr) << w.message;
  testing::XrootdOriginOptions opt;
  opt.netns = w.wan->name();
  opt.netns_address = w.wan->address();
  testing::XrootdStart o = testing::XrootdOrigin::Start(dir.path(), opt);
  if (o.unavailable) {
    GTEST_SKIP() << o.message;
  }
  ASSERT_TRUE(o.origin != nullptr) << o.message;
  EXPECT_EQ(o.origin->host(), w.wan->address());

  auto src = XrdSource::Open(o.origin->Url("w.bin"));
  ASSERT_TRUE(src.has_value()) << src.error().ToString();
  std::vector<std::vector<uint8_t>> bufs(1500, std::vector<uint8_t>(300));
  std::vector<io::ReadRequest> reqs;
  for (size_t i = 0; i < bufs.size(); ++i) {
    reqs.push_back({i * 699, bufs[i], {}});
  }
  ASSERT_TRUE((*src)->ReadV(reqs).has_value());
  for (size_t i = 0; i < bufs.size(); ++i) {
    ASSERT_TRUE(std::equal(bufs[i].begin(), bufs[i].end(),
                           bytes.begin() + static_cast<std::ptrdiff_t>(i * 699)));
  }
  EXPECT_EQ((*src)->wire_stats().vector_requests, 2u);
}

}  // namespace
}  // namespace ferry::xrd
