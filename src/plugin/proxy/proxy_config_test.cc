#include "plugin/proxy/proxy_config.h"

#include <gtest/gtest.h>

namespace ferry::proxy {
namespace {

TEST(ProxyConfig, ReadsFerryDirectivesAndIgnoresTheRest) {
  auto c = ParseProxyConfig(
      "xrd.port 1094\n"
      "ofs.osslib /usr/lib/libXrdFerryProxy.so\n"
      "# ferry.origin commented:1\n"
      "ferry.origin  origin.example:1095   # where data lives\n"
      "ferry.self proxy.example:1094\n"
      "ferry.dir /srv/cache\n"
      "ferry.max_size 2G\n"
      "ferry.channels 6\n"
      "ferry.redirect_users 8\n"
      "ferry.lookahead 0\n"
      "ferry.access_log off\n"
      "ferry.status_ms 100\n"
      "ferry.origin_idle_ms 0\n"
      "ferry.origin_idle_max 16\n"
      "ferry.copy_cache_fraction 0.1\n"
      "ferry.copy_memory 256M\n"
      "pfc.blocksize 4k\n");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->origin, "origin.example:1095");
  EXPECT_EQ(c->self_host(), "proxy.example");
  EXPECT_EQ(c->self_port(), 1094);
  EXPECT_TRUE(c->redirects());
  EXPECT_EQ(c->redirect_users, 8u);
  EXPECT_EQ(c->lookahead, 0u);
  EXPECT_FALSE(c->access_log);
  EXPECT_EQ(c->status_ms, 100u);
  EXPECT_EQ(c->origin_idle_ms, 0u);
  EXPECT_EQ(c->origin_idle_max, 16u);
  EXPECT_DOUBLE_EQ(c->copy_cache_fraction, 0.1);
  EXPECT_EQ(c->copy_memory, 256ull << 20);
  EXPECT_EQ(c->cache.dir, "/srv/cache");
  EXPECT_EQ(c->cache.max_bytes, 2ull << 30);
  EXPECT_EQ(c->cache.channels, 6u);
  EXPECT_EQ(c->OriginUrl("/store/f.root"), "root://origin.example:1095//store/f.root");
  EXPECT_EQ(c->OriginUrl("f.root"), "root://origin.example:1095//f.root");
}

TEST(ProxyConfig, OriginsByLongestDirectoryPrefix) {
  auto c = ParseProxyConfig(
      "ferry.dir /c\nferry.origin main:1094\nferry.origin /store/mc=mc:1094\n"
      "ferry.origin /store/mc/big/=big:2094\nferry.origin /other=main:1094\n"
      "ferry.origin_inflight 8\nferry.origin_wait_ms 2500\n");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->OriginOf("/store/mc/f.root"), "mc:1094");
  EXPECT_EQ(c->OriginOf("/store/mc"), "mc:1094");
  EXPECT_EQ(c->OriginOf("/store/mc/big/f.root"), "big:2094");  // the longest prefix
  EXPECT_EQ(c->OriginOf("/store/mcfoo/f.root"), "main:1094");  // a directory, not a string
  EXPECT_EQ(c->OriginOf("/data/f.root"), "main:1094");
  EXPECT_EQ(c->OriginUrl("/store/mc/f.root"), "root://mc:1094//store/mc/f.root");
  EXPECT_EQ(c->OriginRoot("/store/mc/big/x"), "root://big:2094/");
  EXPECT_EQ(c->Origins(), (std::vector<std::string>{"main:1094", "big:2094", "mc:1094"}));
  EXPECT_EQ(c->origin_inflight, 8u);
  EXPECT_EQ(c->origin_wait_ms, 2500u);
  for (const char* bad :
       {"ferry.origin store=h:1\n", "ferry.origin /=h:1\n", "ferry.origin /a=h\n",
        "ferry.origin /a=h:1\nferry.origin /a/=g:1\n", "ferry.origin_inflight 0\n"}) {
    EXPECT_FALSE(ParseProxyConfig(std::string("ferry.dir /c\nferry.origin o:1\n") + bad)) << bad;
  }
  // A route alone is not enough: every other path needs an origin too.
  EXPECT_FALSE(ParseProxyConfig("ferry.dir /c\nferry.origin /a=h:1\n"));
}

TEST(ProxyConfig, DefaultsAndRequiredKeys) {
  auto c = ParseProxyConfig("ferry.origin o:1\nferry.dir /c\n");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->redirects());  // no ferry.self
  EXPECT_TRUE(c->access_log);
  EXPECT_EQ(c->timeout_s, 60);
  EXPECT_EQ(c->status_ms, 1000u);
  EXPECT_EQ(c->origin_idle_ms, 30000u);
  EXPECT_EQ(c->origin_idle_max, 256u);
  EXPECT_DOUBLE_EQ(c->copy_cache_fraction, 0.25);
  EXPECT_EQ(c->copy_memory, 1ull << 30);
  EXPECT_EQ(c->cache.writeback_wait_ms, 1000u) << "a copy waits for the disk (writer.h)";
  EXPECT_FALSE(ParseProxyConfig("ferry.dir /c\n"));
  EXPECT_FALSE(ParseProxyConfig("ferry.origin o:1\n"));
  EXPECT_EQ(c->lookahead, 8u);
  // The cache's read-ahead switch turns the proxy's off too.
  auto off = ParseProxyConfig("ferry.origin o:1\nferry.dir /c\nferry.readahead off\n");
  ASSERT_TRUE(off);
  EXPECT_EQ(off->lookahead, 0u);
}

TEST(ProxyConfig, SeveralCacheDisks) {
  auto one = ParseProxyConfig("ferry.origin o:1\nferry.dir /c\n");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->data_dirs, std::vector<std::string>{"/c"});
  EXPECT_EQ(one->disk_retry_s, 60u);
  // ferry.dir first (the home: status file, access log), then the data dirs, each once.
  auto c = ParseProxyConfig(
      "ferry.origin o:1\nferry.dir /c\nferry.data_dirs /d1/ /c\nferry.data_dirs /d2\n"
      "ferry.disk_high 95\nferry.disk_low 90\nferry.disk_retry_s 5\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->data_dirs, (std::vector<std::string>{"/c", "/d1", "/d2"}));
  EXPECT_EQ(c->cache.dir, "/c");
  EXPECT_EQ(c->disk_high, 95u);
  EXPECT_EQ(c->disk_low, 90u);
  EXPECT_EQ(c->disk_retry_s, 5u);
  // Without ferry.dir the first data dir is the home.
  auto no_dir = ParseProxyConfig("ferry.origin o:1\nferry.data_dirs /a /b\n");
  ASSERT_TRUE(no_dir);
  EXPECT_EQ(no_dir->cache.dir, "/a");
  EXPECT_EQ(no_dir->data_dirs, (std::vector<std::string>{"/a", "/b"}));
  for (const char* bad : {"ferry.data_dirs rel\n", "ferry.data_dirs /d /d\n",
                          "ferry.disk_high 95\nferry.disk_low 95\n", "ferry.disk_high 100\n",
                          "ferry.disk_retry_s 0\n"}) {
    EXPECT_FALSE(ParseProxyConfig(std::string("ferry.origin o:1\nferry.dir /c\n") + bad)) << bad;
  }
}

TEST(ProxyConfig, RejectsBadValuesNamingTheDirective) {
  for (const char* bad : {"ferry.origin nohost\n",
                          "ferry.origin o:0\n",
                          "ferry.origin :1\n",
                          "ferry.origin o:99999\n",
                          "ferry.self a@b:1\n",
                          "ferry.redirect 2\n",
                          "ferry.redirect_users 0\n",
                          "ferry.timeout x\n",
                          "ferry.page_size 3000\n",
                          "ferry.channels 0\n",
                          "ferry.status_ms 0\n",
                          "ferry.origin_idle_ms -1\n",
                          "ferry.origin_idle_max x\n",
                          "ferry.origin_sss relative.kt\n",
                          "ferry.origin_sss server\n",
                          "ferry.copy_cache_fraction 1.5\n",
                          "ferry.copy_cache_fraction -0.1\n",
                          "ferry.copy_cache_fraction x\n",
                          "ferry.copy_memory lots\n",
                          "ferry.copy_memory -1\n"}) {
    auto c = ParseProxyConfig(std::string("ferry.origin o:1\nferry.dir /c\n") + bad);
    ASSERT_FALSE(c) << bad;
  }
  auto c = ParseProxyConfig("ferry.origin o:1\nferry.dir /c\nferry.redirect maybe\n");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().ToString().find("ferry.redirect"), std::string::npos);
}

TEST(ProxyConfig, OriginCredentials) {
  auto none = ParseProxyConfig("ferry.origin o:1\nferry.dir /c\n");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->origin_sss, "");
  auto own = ParseProxyConfig("ferry.origin o:1\nferry.dir /c\nferry.origin_sss /e/p.kt\n");
  ASSERT_TRUE(own);
  EXPECT_EQ(own->origin_sss, "/e/p.kt");
  EXPECT_FALSE(own->origin_sss_shared);
  auto shared = ParseProxyConfig("ferry.origin o:1\nferry.dir /c\nferry.origin_sss server:/a.kt\n");
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->origin_sss, "/a.kt");
  EXPECT_TRUE(shared->origin_sss_shared);
  EXPECT_FALSE(ParseProxyConfig("ferry.origin o:1\nferry.dir /c\nferry.origin_sss server:\n"));
  auto token = ParseProxyConfig(
      "ferry.origin o:1\nferry.dir /c\nferry.origin_token /run/t\nferry.origin_ca_dir /ca\n");
  ASSERT_TRUE(token);
  EXPECT_EQ(token->origin_token, "/run/t");
  EXPECT_EQ(token->origin_ca_dir, "/ca");
  EXPECT_FALSE(ParseProxyConfig("ferry.origin o:1\nferry.dir /c\nferry.origin_token t\n"));
  auto x509 = ParseProxyConfig("ferry.origin o:1\nferry.dir /c\nferry.origin_x509 /tmp/x509up\n");
  ASSERT_TRUE(x509);
  EXPECT_EQ(x509->origin_x509, "/tmp/x509up");
  EXPECT_FALSE(ParseProxyConfig("ferry.origin o:1\nferry.dir /c\nferry.origin_x509 x509up\n"));
  EXPECT_FALSE(ParseProxyConfig(  // one identity at the origin
      "ferry.origin o:1\nferry.dir /c\nferry.origin_x509 /x\nferry.origin_token /t\n"));
}

}  // namespace
}  // namespace ferry::proxy
