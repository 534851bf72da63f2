#include "cli/args.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ferry::cli {
namespace {

Result<Args> ParseWords(std::vector<const char*> words) {
  return Args::Parse(words, {{"--json"}, {"--tree", true}, {"--branch", true}, {"--help"}});
}

TEST(CliArgs, OptionsValuesAndPositionals) {
  auto a = ParseWords(
      {"f.root", "--tree", "Events", "--branch=nJet", "--branch", "MET_pt", "--json", "g.root"});
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->positional(), (std::vector<std::string>{"f.root", "g.root"}));
  EXPECT_EQ(a->Get("--tree"), "Events");
  EXPECT_EQ(a->All("--branch"), (std::vector<std::string>{"nJet", "MET_pt"}));
  EXPECT_EQ(a->Get("--branch"), "MET_pt");  // the last one wins for Get
  EXPECT_TRUE(a->Has("--json"));
  EXPECT_FALSE(a->Has("--help"));
  EXPECT_EQ(a->GetOr("--missing", "dflt"), "dflt");
}

TEST(CliArgs, DoubleDashEndsOptionsAndDashIsPositional) {
  auto a = ParseWords({"--json", "--", "--tree", "-"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->positional(), (std::vector<std::string>{"--tree", "-"}));
  auto b = ParseWords({"-"});
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->positional(), (std::vector<std::string>{"-"}));
}

TEST(CliArgs, UnknownOptionSuggestsTheClosest) {
  auto a = ParseWords({"--jsno"});
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().message(), "unknown option --jsno (did you mean '--json'?)");
  auto b = ParseWords({"--xyzzy"});
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().message(), "unknown option --xyzzy");
  auto c = ParseWords({"--hlep"});
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find("'--help'"), std::string::npos);
}

// Every command answers --help, also where its option list does not name it.
TEST(CliArgs, HelpIsAlwaysAnswered) {
  std::vector<const char*> words = {"--json", "--help"};
  auto a = Args::Parse(words, {{"--json"}});
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().message(), kHelpRequested);
  EXPECT_EQ(UsageError(a.error().message(), "ferry x"), kExitOk);
  EXPECT_EQ(UsageError("unknown option --q", "ferry x"), kExitUsage);
}

// The hidden --list-options lists what the parser takes, for the help test to compare.
TEST(CliArgs, ListOptionsNamesEveryOption) {
  std::vector<const char*> words = {"--list-options"};
  auto a = Args::Parse(words, {{"--json"}, {"--tree", true}});
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().message(), "options: --json --tree");
  EXPECT_EQ(UsageError(a.error().message(), "ferry x"), kExitOk);
}

TEST(CliArgs, MissingAndUnexpectedValues) {
  auto a = ParseWords({"--tree"});
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().message(), "option --tree needs a value");
  auto b = ParseWords({"--json=yes"});
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().message(), "option --json takes no value");
  auto c = ParseWords({"--tree="});  // an explicit empty value is a value
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->Get("--tree"), "");
}

TEST(CliDidYouMean, TyposPrefixesAndFarWords) {
  EXPECT_EQ(DidYouMean("stauts", {"status", "stats", "ls"}), " (did you mean 'status'?)");
  EXPECT_EQ(DidYouMean("replcia", {"build", "replica"}), " (did you mean 'replica'?)");
  EXPECT_EQ(DidYouMean("rep", {"replica", "evict"}), " (did you mean 'replica'?)");  // prefix
  EXPECT_EQ(DidYouMean("s", {"stats", "status"}), "");   // too short to guess
  EXPECT_EQ(DidYouMean("st", {"stats", "status"}), "");  // ambiguous prefix
  EXPECT_EQ(DidYouMean("compress", {"ls", "dump"}), "");
  EXPECT_EQ(DidYouMean("", {"ls"}), "");
  EXPECT_EQ(DidYouMean("--congestoin", {"--congestion", "--streams"}),
            " (did you mean '--congestion'?)");
}

}  // namespace
}  // namespace ferry::cli
