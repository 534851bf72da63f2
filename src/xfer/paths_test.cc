#include "xfer/paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "testing/testing.h"
#include "xfer/sources.h"

namespace ferry::xfer {
namespace {

TEST(XferPaths, Validate) {
  for (const char* ok : {"a", "a/b", "a.b/c..d/...", ".hidden", "x/.y"}) {
    EXPECT_TRUE(ValidateRelativePath(ok).has_value()) << ok;
  }
  for (const char* bad : {"", "/abs", "a//b", "a/", "..", "../x", "a/../b", "a/..", ".", "a/./b"}) {
    EXPECT_FALSE(ValidateRelativePath(bad).has_value()) << bad;
  }
  EXPECT_EQ(ValidateRelativePath("a/../b").error().code(), ErrorCode::kPermission);
  EXPECT_FALSE(ValidateRelativePath(std::string("a\0b", 3)).has_value());
  EXPECT_FALSE(ValidateRelativePath(std::string(256, 'x')).has_value());
  EXPECT_TRUE(ValidateRelativePath(std::string(255, 'x')).has_value());
}

TEST(XferPaths, JoinAndSplit) {
  EXPECT_EQ(JoinRelative("", "b"), "b");
  EXPECT_EQ(JoinRelative("a", ""), "a");
  EXPECT_EQ(JoinRelative("a", "b/c"), "a/b/c");
  auto [d, n] = SplitDirName("a/b/c");
  EXPECT_EQ(d, "a/b");
  EXPECT_EQ(n, "c");
  auto [d2, n2] = SplitDirName("c");
  EXPECT_EQ(d2, "");
  EXPECT_EQ(n2, "c");
  EXPECT_EQ(PartName("x").size(), PartName(std::string(255, 'y')).size());
  EXPECT_NE(PartName("x"), JournalName("x"));
}

TEST(XferPaths, OpenDirBeneathCreatesAndRefusesSymlinks) {
  testing::TempDir tmp;
  std::string root = tmp.File("root");
  std::string outside = tmp.File("outside");
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(outside.c_str(), 0755), 0);
  Fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(root_fd.valid());

  auto d = OpenDirBeneath(root_fd.get(), "a/b/c", true);
  ASSERT_TRUE(d.has_value()) << d.error().ToString();
  EXPECT_TRUE(std::filesystem::is_directory(root + "/a/b/c"));
  EXPECT_TRUE(OpenDirBeneath(root_fd.get(), "", false).has_value());
  EXPECT_FALSE(OpenDirBeneath(root_fd.get(), "missing", false).has_value());

  // A symlink planted inside the root, pointing outside, is refused at every depth.
  ASSERT_EQ(::symlink(outside.c_str(), (root + "/link").c_str()), 0);
  ASSERT_EQ(::symlink(outside.c_str(), (root + "/a/link").c_str()), 0);
  for (const char* p : {"link", "link/x", "a/link", "a/link/y"}) {
    auto r = OpenDirBeneath(root_fd.get(), p, true);
    ASSERT_FALSE(r.has_value()) << p;
    EXPECT_EQ(r.error().code(), ErrorCode::kPermission) << p << ": " << r.error().ToString();
  }
  EXPECT_TRUE(std::filesystem::is_empty(outside));

  // A file symlink is not opened either.
  ASSERT_EQ(::symlink((outside + "/f").c_str(), (root + "/a/f").c_str()), 0);
  auto dir = OpenDirBeneath(root_fd.get(), "a", false);
  ASSERT_TRUE(dir.has_value());
  EXPECT_FALSE(OpenInDir(dir->get(), "f", O_WRONLY | O_CREAT, 0644).has_value());
  EXPECT_FALSE(std::filesystem::exists(outside + "/f"));
}

TEST(XferSources, CollectsFilesAndTreesWithRelativeNames) {
  testing::TempDir tmp;
  std::filesystem::create_directories(tmp.File("tree/sub/deeper"));
  testing::WriteWholeFile(tmp.File("tree/b.bin"), {1, 2, 3});
  testing::WriteWholeFile(tmp.File("tree/a.bin"), {});
  testing::WriteWholeFile(tmp.File("tree/sub/deeper/c.bin"), {4});
  testing::WriteWholeFile(tmp.File("single.bin"), std::vector<uint8_t>(10, 0));
  ASSERT_EQ(::symlink("b.bin", tmp.File("tree/link").c_str()), 0);
  std::vector<std::string> paths = {tmp.File("tree/"), tmp.File("single.bin")};
  auto list = CollectSources(paths, "dst/x");
  ASSERT_TRUE(list.has_value()) << list.error().ToString();
  ASSERT_EQ(list->files.size(), 4u);
  EXPECT_EQ(list->files[0].rel_path, "dst/x/tree/a.bin");
  EXPECT_EQ(list->files[1].rel_path, "dst/x/tree/b.bin");
  EXPECT_EQ(list->files[2].rel_path, "dst/x/tree/sub/deeper/c.bin");
  EXPECT_EQ(list->files[3].rel_path, "dst/x/single.bin");
  EXPECT_EQ(list->total_bytes, 14u);
  ASSERT_EQ(list->skipped.size(), 1u);
  EXPECT_FALSE(CollectSources(paths, "../up").has_value());
  std::vector<std::string> twice = {tmp.File("single.bin"), tmp.File("single.bin")};
  EXPECT_FALSE(CollectSources(twice, "").has_value());
}

}  // namespace
}  // namespace ferry::xfer
