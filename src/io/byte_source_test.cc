#include "io/byte_source.h"

#include <vector>

#include <gtest/gtest.h>

#include "io/local_source.h"
#include "testing/testing.h"

namespace ferry::io {
namespace {

class LocalSourceTest : public ::testing::TestWithParam<LocalMode> {};

TEST_P(LocalSourceTest, ReadAtReadVAndCounters) {
  testing::TempDir dir;
  auto bytes = testing::PseudoRandomBytes(100000, 11);
  testing::WriteWholeFile(dir.File("f"), bytes);
  auto src = OpenLocal(dir.File("f"), GetParam());
  ASSERT_TRUE(src.has_value()) << src.error().ToString();
  ByteSource& s = **src;
  EXPECT_EQ(s.size(), bytes.size());

  std::vector<uint8_t> a(1000);
  ASSERT_TRUE(s.ReadAt(5000, a).has_value());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), bytes.begin() + 5000));

  std::vector<uint8_t> b(10), c(20), d(5);
  ReadRequest reqs[3] = {{0, b, {}}, {99980, c, {}}, {99999, d, {}}};
  Status st = s.ReadV(reqs);
  EXPECT_FALSE(st.has_value());  // the last range runs past the end
  EXPECT_TRUE(reqs[0].status.has_value());
  EXPECT_TRUE(reqs[1].status.has_value());
  ASSERT_FALSE(reqs[2].status.has_value());
  EXPECT_EQ(reqs[2].status.error().code(), ErrorCode::kShortRead);
  EXPECT_TRUE(std::equal(c.begin(), c.end(), bytes.begin() + 99980));

  IoStats stats = s.stats();
  EXPECT_EQ(stats.read_calls, 1u);
  EXPECT_EQ(stats.vector_calls, 1u);
  EXPECT_EQ(stats.chunks, 4u);
  EXPECT_EQ(stats.bytes, 1030u);
  EXPECT_EQ(stats.requests(), 2u);
}

TEST_P(LocalSourceTest, ShortReadNamesTheSource) {
  testing::TempDir dir;
  testing::WriteWholeFile(dir.File("small"), {1, 2, 3});
  auto src = OpenLocal(dir.File("small"), GetParam());
  ASSERT_TRUE(src.has_value());
  std::vector<uint8_t> buf(4);
  auto st = (*src)->ReadAt(0, buf);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kShortRead);
  EXPECT_NE(st.error().ToString().find("small"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Modes,
                         LocalSourceTest,
                         ::testing::Values(LocalMode::kPread, LocalMode::kMmap));

TEST(MmapSource, ViewIsZeroCopy) {
  testing::TempDir dir;
  testing::WriteWholeFile(dir.File("f"), {9, 8, 7, 6});
  auto src = MmapSource::Open(dir.File("f"));
  ASSERT_TRUE(src.has_value());
  auto v = (*src)->View(1, 2);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ((*v)[0], 8);
  EXPECT_FALSE((*src)->View(3, 2).has_value());
  EXPECT_EQ((*src)->stats().requests(), 0u);
}

}  // namespace
}  // namespace ferry::io
