#include "cache/url.h"

#include <gtest/gtest.h>

namespace ferry::cache {
namespace {

std::string N(std::string_view url, std::vector<std::string> allowed = {}) {
  auto r = NormalizeUrl(url, allowed);
  return r ? *r : "ERROR: " + r.error().message();
}

TEST(UrlTest, Normalises) {
  EXPECT_EQ(N("root://Host.CERN.ch//data/f.root"), "root://host.cern.ch:1094/data/f.root");
  EXPECT_EQ(N("root://host/data/f.root"), "root://host:1094/data/f.root");
  EXPECT_EQ(N("root://host:1094//data//./x/../f.root"), "root://host:1094/data/f.root");
  EXPECT_EQ(N("ROOT://host:11094//f"), "root://host:11094/f");
  EXPECT_EQ(N("https://host/a/b"), "https://host:443/a/b");
  EXPECT_EQ(N("root://host"), "root://host:1094/");
  EXPECT_EQ(N("root://host//../../etc"), "root://host:1094/etc");
  EXPECT_EQ(N("root://[::1]:2000//f"), "root://[::1]:2000/f");
}

TEST(UrlTest, CredentialsAndTokensNeverSurvive) {
  EXPECT_EQ(N("root://alice:secret@host//f?authz=TOKEN&xrd.wantprot=gsi#frag"),
            "root://host:1094/f");
  EXPECT_EQ(N("root://u@host//f?authz=T&svcClass=x&a=1", {"svcClass", "a"}),
            "root://host:1094/f?a=1&svcClass=x");
  const std::string n = N("root://host//f?authz=Bearer%20abc&scitag.flow=3", {"scitag.flow"});
  EXPECT_EQ(n.find("authz"), std::string::npos);
  EXPECT_EQ(n.find("abc"), std::string::npos);
}

TEST(UrlTest, SameFileSameKey) {
  auto a = NormalizeUrl("root://h//data/f?authz=1");
  auto b = NormalizeUrl("root://user@H:1094/data/f?authz=2");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(EntryKey(*a), EntryKey(*b));
  EXPECT_EQ(EntryKey(*a).size(), 16u);
  EXPECT_NE(EntryKey(*a), EntryKey("root://h:1094/data/g"));
}

TEST(UrlTest, RejectsNonUrls) {
  EXPECT_FALSE(NormalizeUrl("/local/path"));
  EXPECT_FALSE(NormalizeUrl("root:///nohost"));
  EXPECT_FALSE(NormalizeUrl("root://host:99999//f"));
  EXPECT_FALSE(NormalizeUrl("root://host:x//f"));
}

}  // namespace
}  // namespace ferry::cache
