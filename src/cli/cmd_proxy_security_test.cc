#include "cli/cmd_proxy_security.h"

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace ferry::cli {
namespace {

int Ok(const Args& /*args*/) {
  return kExitOk;
}

constexpr OptionSpec kOptions[] = {
    {"--auth", "P", ""},          {"--authdb", "F", ""},  {"--origin-credentials", "C", ""},
    {"--https", "P", ""},         {"--cert", "F", ""},    {"--key", "F", ""},
    {"--ca-dir", "D", ""},        {"--gridmap", "F", ""}, {"--scitokens", "F", ""},
    {"--origin-ca-dir", "D", ""},
};

constexpr CommandSpec kSpec{.path = "proxy config", .summary = "", .options = kOptions, .run = Ok};

class SecurityPlanTest : public ::testing::Test {
 protected:
  SecurityPlanTest() {
    // Lines as xrdsssadmin writes them (the keys are made up).
    Write("clients.kt",
          "0 u:alice g:cms n:alice N:11 c:1 e:0 k:aa\n"
          "0 u:bob g:cms n:bob N:12 c:1 e:0 k:bb\n");
    Write("proxy.kt", "0 u:ferryproxy g:p n:ferryproxy N:13 c:1 e:0 k:cc\n");
    Write("clash.kt", "0 u:ferryproxy g:p n:bob N:14 c:1 e:0 k:dd\n");
    Write("authdb", "u alice /data/a rl\n");
  }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_.File(name)) << text;
  }

  Result<SecurityPlan> Plan(std::vector<std::string> words) {
    for (std::string& w : words) {
      const size_t at = w.find('@');  // "@name" stands for a file of the test
      if (at != std::string::npos) {
        w = w.substr(0, at) + dir_.File(w.substr(at + 1));
      }
    }
    std::vector<const char*> argv;
    argv.reserve(words.size());
    for (const std::string& w : words) {
      argv.push_back(w.c_str());
    }
    auto args = Args::Parse(argv, kSpec);
    EXPECT_TRUE(args) << args.error().ToString();
    return MakeSecurityPlan(*args, "/admin");
  }

  testing::TempDir dir_;
};

TEST_F(SecurityPlanTest, NothingAskedNothingWritten) {
  auto plan = Plan({});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->config, "");
  EXPECT_TRUE(plan->files.empty());
}

TEST_F(SecurityPlanTest, SssSharesOneKeytabWithTheProxysKeyLast) {
  auto plan = Plan({"--auth", "sss:@clients.kt", "--authdb", "@authdb", "--origin-credentials",
                    "sss:@proxy.kt"});
  ASSERT_TRUE(plan) << plan.error().ToString();
  ASSERT_EQ(plan->files.size(), 1u);
  EXPECT_EQ(plan->files[0].first, "/admin/sss.keytab");
  const std::string& kt = plan->files[0].second;
  EXPECT_LT(kt.find("n:bob"), kt.find("n:ferryproxy"));
  EXPECT_EQ(kt.back(), '\n');
  const std::string& c = plan->config;
  EXPECT_NE(c.find("sec.protocol sss -s /admin/sss.keytab\n"), std::string::npos);
  EXPECT_NE(c.find("sec.protbind * only sss\n"), std::string::npos);
  EXPECT_LT(c.find("sec.protocol sss"), c.find("sec.protbind"));
  EXPECT_NE(c.find("ferry.origin_sss server:/admin/sss.keytab\n"), std::string::npos);
  EXPECT_NE(c.find("ofs.authorize\n"), std::string::npos);
  EXPECT_NE(c.find("acc.authdb " + dir_.File("authdb")), std::string::npos);
  EXPECT_EQ(c.find("k:cc"), std::string::npos);  // no key in the configuration
}

TEST_F(SecurityPlanTest, OriginCredentialsAloneGetTheirOwnCopy) {
  auto plan = Plan({"--origin-credentials", "sss:@proxy.kt"});
  ASSERT_TRUE(plan) << plan.error().ToString();
  ASSERT_EQ(plan->files.size(), 1u);
  EXPECT_EQ(plan->files[0].first, "/admin/origin-sss.keytab");
  EXPECT_NE(plan->config.find("ferry.origin_sss /admin/origin-sss.keytab\n"), std::string::npos);
  EXPECT_EQ(plan->config.find("sec.protocol"), std::string::npos);
}

TEST_F(SecurityPlanTest, RefusesWhatWouldWeakenIt) {
  const std::vector<std::vector<std::string>> bad = {
      {"--authdb", "@authdb"},                    // identities would be login names
      {"--auth", "sss:@clients.kt"},              // origin channels: a client's key
      {"--auth", "unix", "--authdb", "@authdb"},  // unix names are claims
      {"--auth", "sss:@clients.kt", "--origin-credentials", "sss:@clash.kt"},  // same key name
      {"--auth", "krb9"},                                                      // unknown protocol
      {"--auth", "sss"},                                                       // no keytab
      {"--origin-credentials", "x509:p"},          // renewed in place: a full path
      {"--auth", "gsi"},                           // no certificate, key or CAs
      {"--origin-credentials", "token:relative"},  // renewed in place: a full path
      {"--https", "8443"},                         // no certificate
      {"--https", "8443", "--cert", "c", "--key", "k", "--gridmap", "@authdb"},  // unverified
      {"--auth", "sss:@clients.kt", "--origin-credentials", "sss:@proxy.kt", "--scitokens",
       "@authdb"},  // tokens without an authdb
  };
  for (const auto& words : bad) {
    auto plan = Plan(words);
    EXPECT_FALSE(plan) << words[0] << " " << words[1] << (words.size() > 2 ? " " + words[2] : "");
  }
}

TEST_F(SecurityPlanTest, TokenAtTheOriginKeepsTheClientsKeytabApart) {
  auto plan = Plan({"--auth", "sss:@clients.kt", "--origin-credentials", "token:/run/t",
                    "--origin-ca-dir", "/ca"});
  ASSERT_TRUE(plan) << plan.error().ToString();
  ASSERT_EQ(plan->files.size(), 1u);  // the clients' keys alone, copied for xrootd's account
  EXPECT_EQ(plan->files[0].first, "/admin/sss.keytab");
  EXPECT_EQ(plan->files[0].second.find("ferryproxy"), std::string::npos);
  const std::string& c = plan->config;
  EXPECT_NE(c.find("sec.protocol sss -s /admin/sss.keytab\n"), std::string::npos);
  EXPECT_NE(c.find("ferry.origin_token /run/t\n"), std::string::npos);
  EXPECT_NE(c.find("ferry.origin_ca_dir /ca\n"), std::string::npos);
  EXPECT_EQ(c.find("ferry.origin_sss"), std::string::npos);
  EXPECT_LT(c.find("sec.protocol sss"), c.find("sec.protbind"));
}

TEST_F(SecurityPlanTest, GsiClientsAndAnX509ProxyAtTheOrigin) {
  auto plan = Plan({"--auth", "gsi", "--authdb", "@authdb", "--cert", "/c.pem", "--key", "/k.pem",
                    "--ca-dir", "/ca", "--gridmap", "@authdb", "--origin-credentials",
                    "x509:/run/x509up", "--origin-ca-dir", "/oca"});
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_TRUE(plan->files.empty());  // the proxy file is read where it is renewed
  const std::string& c = plan->config;
  EXPECT_NE(c.find("sec.protocol gsi -certdir:/ca -cert:/c.pem -key:/k.pem -gridmap:"),
            std::string::npos);
  EXPECT_NE(c.find(" -gmapopt:2\n"), std::string::npos);  // unmapped DNs are refused
  EXPECT_NE(c.find("sec.protbind * only gsi\n"), std::string::npos);
  EXPECT_NE(c.find("ferry.origin_x509 /run/x509up\n"), std::string::npos);
  EXPECT_NE(c.find("ferry.origin_ca_dir /oca\n"), std::string::npos);
  EXPECT_EQ(c.find("xrd.tls "), std::string::npos);  // gsi brings its own handshake
  // Parameters given with the protocol are written as given.
  auto given = Plan({"--auth", "gsi:-certdir:/x -cert:/y -key:/z"});
  ASSERT_TRUE(given) << given.error().ToString();
  EXPECT_NE(given->config.find("sec.protocol gsi -certdir:/x -cert:/y -key:/z\n"),
            std::string::npos);
}

TEST_F(SecurityPlanTest, HttpsAndTokens) {
  auto plan = Plan({"--auth", "sss:@clients.kt", "--authdb", "@authdb", "--origin-credentials",
                    "sss:@proxy.kt", "--https", "8443", "--cert", "/c.pem", "--key", "/k.pem",
                    "--ca-dir", "/ca", "--gridmap", "@authdb", "--scitokens", "@authdb"});
  ASSERT_TRUE(plan) << plan.error().ToString();
  const std::string& c = plan->config;
  EXPECT_NE(c.find("xrd.protocol XrdHttp:8443 libXrdHttp.so\n"), std::string::npos);
  EXPECT_NE(c.find("xrd.tls /c.pem /k.pem\n"), std::string::npos);
  EXPECT_NE(c.find("xrd.tlsca certdir /ca\n"), std::string::npos);
  EXPECT_NE(c.find("http.gridmap "), std::string::npos);
  EXPECT_NE(c.find("ofs.authlib ++ libXrdAccSciTokens.so config="), std::string::npos);
  EXPECT_NE(c.find("http.header2cgi Authorization authz\n"), std::string::npos);
  // The token library is stacked before the authdb is read.
  EXPECT_LT(c.find("ofs.authlib"), c.find("acc.authdb"));
}

}  // namespace
}  // namespace ferry::cli
