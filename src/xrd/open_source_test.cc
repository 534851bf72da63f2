#include "xrd/open_source.h"

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace ferry::xrd {
namespace {

TEST(OpenSource, RecognisesXrootdSchemes) {
  EXPECT_TRUE(IsXrootdUrl("root://host:1094//a/b.root"));
  EXPECT_TRUE(IsXrootdUrl("ROOT://host//a"));
  EXPECT_TRUE(IsXrootdUrl("roots://host//a"));
  EXPECT_TRUE(IsXrootdUrl("xroot://host//a"));
  EXPECT_TRUE(IsXrootdUrl("xroots://host//a"));
  EXPECT_FALSE(IsXrootdUrl("/tmp/root://x"));
  EXPECT_FALSE(IsXrootdUrl("https://host/a"));
  EXPECT_FALSE(IsXrootdUrl("file.root"));
  EXPECT_FALSE(IsXrootdUrl("://x"));
}

TEST(OpenSource, LocalPathAndFileUrlOpenTheSameBytes) {
  testing::TempDir dir;
  const std::string path = dir.File("x.bin");
  testing::WriteWholeFile(path, testing::PseudoRandomBytes(1000, 3));
  for (const std::string& spec : {path, "file://" + path, "file://localhost" + path}) {
    auto src = OpenSource(spec);
    ASSERT_TRUE(src.has_value()) << spec << ": " << src.error().ToString();
    EXPECT_EQ((*src)->size(), 1000u);
  }
  OpenOptions mmap;
  mmap.local_mode = io::LocalMode::kMmap;
  auto mapped = OpenSource(path, mmap);
  ASSERT_TRUE(mapped.has_value());
  EXPECT_TRUE((*mapped)->View(0, 10).has_value());
}

TEST(OpenSource, RejectsUnknownSchemesAndRelativeFileUrls) {
  auto http = OpenSource("https://example.invalid/a.root");
  ASSERT_FALSE(http.has_value());
  EXPECT_EQ(http.error().code(), ErrorCode::kUnsupported);
  auto rel = OpenSource("file://relative/path");
  ASSERT_FALSE(rel.has_value());
  EXPECT_EQ(rel.error().code(), ErrorCode::kInvalidArgument);
  auto missing = OpenSource("/nonexistent/ferry/file.root");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace ferry::xrd
