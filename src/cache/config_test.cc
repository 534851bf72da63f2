#include "cache/config.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "cache/conf_file.h"
#include "cache/testing/recording_replica_hooks.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

TEST(ConfigTest, ConfKeysAndDefaults) {
  auto c = ConfigFromMap({{"dir", "/c"},
                          {"max_size", "2G"},
                          {"page_size", "8K"},
                          {"iogap", "1K"},
                          {"channels", "4"},
                          {"url_params", "a,,b"},
                          {"url", "root://*"},
                          {"lib", "x.so"},
                          {"enable", "true"}},
                         /*use_env=*/false);
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->dir, "/c");
  EXPECT_EQ(c->max_bytes, 2ull << 30);
  EXPECT_EQ(c->page_size, 8192u);
  EXPECT_EQ(c->iogap, 1024u);
  EXPECT_EQ(c->channels, 4u);
  EXPECT_EQ(c->url_params, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c->min_free_bytes, 1ull << 30);  // default
  EXPECT_EQ(c->planner().page_size, 8192u);
  EXPECT_TRUE(c->readahead);
  EXPECT_EQ(c->readahead_max_bytes, 128u << 20);
  EXPECT_TRUE(c->bypass);
  EXPECT_EQ(c->bypass_percent, 25u);
  EXPECT_NE(std::find(c->bypass_tools.begin(), c->bypass_tools.end(), "xrdcp"),
            c->bypass_tools.end());
}

TEST(ConfigTest, ReadAheadAndBypassKeys) {
  auto c = ConfigFromMap({{"readahead", "off"},
                          {"readahead_max", "16M"},
                          {"bypass", "off"},
                          {"bypass_fraction", "0.4"},
                          {"bypass_tools", "mycp,,hadd"}},
                         false);
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_FALSE(c->readahead);
  EXPECT_EQ(c->readahead_max_bytes, 16u << 20);
  EXPECT_FALSE(c->bypass);
  EXPECT_EQ(c->bypass_percent, 40u);
  EXPECT_EQ(c->bypass_tools, (std::vector<std::string>{"mycp", "hadd"}));
  EXPECT_EQ(ConfigFromMap({{"bypass_fraction", "30%"}}, false)->bypass_percent, 30u);
  EXPECT_EQ(ConfigFromMap({{"bypass_fraction", "60"}}, false)->bypass_percent, 60u);
}

TEST(ConfigTest, BadValuesNameTheKey) {
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"page_size", "3000"},
                                                        {"page_size", "2M"},
                                                        {"channels", "0"},
                                                        {"max_size", "lots"},
                                                        {"retries", "-1"},
                                                        {"revalidate_s", "x"},
                                                        {"max_chunks", "0"},
                                                        {"readahead", "on"},
                                                        {"readahead_max", "1K"},
                                                        {"bypass", "yes"},
                                                        {"bypass_fraction", "0"},
                                                        {"bypass_fraction", "1.5"},
                                                        {"bypass_fraction", "x%"}}) {
    auto c = ConfigFromMap({{k, v}}, false);
    ASSERT_FALSE(c) << k << "=" << v;
    EXPECT_NE(c.error().message().find(k), std::string::npos);
  }
}

// replica_codec is the replica tier's: checked by the tier a host gives ConfigFromMap (here one
// that refuses "bad"), kept as written without one.
TEST(ConfigTest, TheReplicaTierChecksItsKeys) {
  RecordingReplicaHooks tier;
  auto bad = ConfigFromMap({{"replica_codec", "bad"}}, false, &tier);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("replica_codec = 'bad': must not be bad"), std::string::npos)
      << bad.error().message();
  auto ok = ConfigFromMap({{"replica_codec", "lz4"}}, false, &tier);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->replica_codec, "lz4");
  auto unchecked = ConfigFromMap({{"replica_codec", "bad"}}, false);
  ASSERT_TRUE(unchecked);
  EXPECT_EQ(unchecked->replica_codec, "bad");
}

TEST(ConfigTest, EnvironmentOverridesConfFile) {
  // The test's own environment, set and cleared before any other thread runs.
  ::setenv("FERRY_CACHE_DIR", "/from/env", 1);  // NOLINT(concurrency-mt-unsafe)
  ::setenv("FERRY_CACHE_MAX_SIZE", "10M", 1);   // NOLINT(concurrency-mt-unsafe)
  auto c = ConfigFromMap({{"dir", "/from/conf"}, {"max_size", "1G"}, {"channels", "3"}}, true);
  ::unsetenv("FERRY_CACHE_DIR");       // NOLINT(concurrency-mt-unsafe)
  ::unsetenv("FERRY_CACHE_MAX_SIZE");  // NOLINT(concurrency-mt-unsafe)
  ASSERT_TRUE(c);
  EXPECT_EQ(c->dir, "/from/env");
  EXPECT_EQ(c->max_bytes, 10u << 20);
  EXPECT_EQ(c->channels, 3u);
  auto ignored = ConfigFromMap({{"dir", "/from/conf"}}, false);
  EXPECT_EQ(ignored->dir, "/from/conf");
}

// The conf file `ferry cache enable` writes, read back as XrdCl would hand it to the plug-in.
TEST(ConfFileTest, ReadsKeysTrimsBlanksAndSkipsComments) {
  testing::TempDir tmp;
  const std::string path = tmp.File(kConfFileName);
  {
    std::ofstream out(path);
    out << "# ferry cache\nurl = root://*\n  dir=/data/cache   # trailing comment\n"
        << "no equals sign here\nmax_size = 10G\r\n = empty key\n";
  }
  auto kv = ReadConfFile(path);
  EXPECT_EQ(kv["url"], "root://*");
  EXPECT_EQ(kv["dir"], "/data/cache");
  EXPECT_EQ(kv["max_size"], "10G");
  EXPECT_EQ(kv.count("no equals sign here"), 0u);
  EXPECT_TRUE(ReadConfFile(tmp.File("missing.conf")).empty());
}

TEST(ConfFileTest, EffectiveConfigTakesTheGivenConfDirThenDir) {
  testing::TempDir tmp;
  EXPECT_EQ(FindEnabledConf(tmp.path()), "");
  auto none = EffectiveConfig(tmp.path(), std::nullopt);
  if (std::getenv("FERRY_CACHE_DIR") == nullptr) {  // NOLINT: read-only
    ASSERT_FALSE(none.has_value());
    EXPECT_NE(none.error().message().find("no cache directory"), std::string::npos);
  }
  {
    std::ofstream out(tmp.File(kConfFileName));
    out << "dir = /from/conf\nchannels = 3\n";
  }
  EXPECT_EQ(FindEnabledConf(tmp.path()), tmp.File(kConfFileName));
  auto c = EffectiveConfig(tmp.path(), std::nullopt);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->channels, 3u);
  auto over = EffectiveConfig(tmp.path(), std::string("/from/flag"));
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->dir, "/from/flag");
}

}  // namespace
}  // namespace ferry::cache
