#include "cache/conf_file.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace ferry::cache {
namespace {

TEST(ConfFile, WhatIsWrittenReadsBack) {
  testing::TempDir dir;
  const std::string conf_dir = dir.path() + "/a/b/client.plugins.d";  // parents created
  PluginConf conf{.url = "root://*",
                  .lib = "/opt/ferry/lib/ferry/libXrdClFerry-5.so",
                  .settings = {{"dir", "/data/cache dir"}, {"max_size", "100G"}, {"shared", ""}}};
  auto path = WriteConfFile(conf_dir, conf);
  ASSERT_TRUE(path.has_value()) << path.error().ToString();
  EXPECT_EQ(*path, conf_dir + "/" + kConfFileName);
  auto kv = ReadConfFile(*path);
  EXPECT_EQ(kv["url"], conf.url);
  EXPECT_EQ(kv["lib"], conf.lib);
  EXPECT_EQ(kv["enable"], "true");
  for (const auto& [k, v] : conf.settings) {
    EXPECT_EQ(kv[k], v) << k;
  }
  EXPECT_EQ(kv.size(), 3 + conf.settings.size());
  EXPECT_FALSE(PathExists(*path + ".tmp"));
  EXPECT_EQ(FindEnabledConf(conf_dir), *path);
  EXPECT_TRUE(RemoveConfFile(conf_dir).value());
  EXPECT_FALSE(RemoveConfFile(conf_dir).value());  // nothing left to remove
  EXPECT_FALSE(PathExists(*path));
}

TEST(ConfFile, SettingsThatWouldNotReadBackAreRefused) {
  testing::TempDir dir;
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"dir", "/c#1"},
                                                        {"dir", "/c\nenable = false"},
                                                        {"a=b", "1"},
                                                        {"", "1"},
                                                        {"dir", " /c"}}) {
    PluginConf conf{.lib = "/l.so", .settings = {{k, v}}};
    auto path = WriteConfFile(dir.path(), conf);
    ASSERT_FALSE(path.has_value()) << k << " = " << v;
    EXPECT_EQ(path.error().code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_FALSE(PathExists(dir.path() + "/" + kConfFileName));
}

}  // namespace
}  // namespace ferry::cache
