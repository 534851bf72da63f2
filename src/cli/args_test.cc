#include "cli/args.h"

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/command_spec.h"
#include "cli/commands.h"

namespace ferry::cli {
namespace {

int Ok(const Args& /*args*/) {
  return kExitOk;
}

constexpr OptionSpec kOptions[] = {
    {"--json", "", "print one JSON document"},
    {"--tree", "T", "the tree to read", "Events"},
    {"--branch", "B", "a branch to print; repeat for more"},
    {"--out", "DIR", "where the output goes"},
};

constexpr CommandSpec kTest{
    .path = "test dump",
    .summary = "a command of the tests",
    .synopsis = "FILE --out DIR",
    .options = kOptions,
    .notes = "Some notes.",
    .run = Ok,
};

constexpr const CommandSpec* kTestSubcommands[] = {&kTest};

constexpr CommandSpec kTestGroup{
    .path = "test",
    .summary = "the group of the tests",
    .subcommands = kTestSubcommands,
};

Result<Args> ParseWords(std::vector<const char*> words) {
  return Args::Parse(words, kTest);
}

// The text with every run of blanks and line breaks as one space: wrapping does not matter.
std::string Flat(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  std::string out;
  while (in >> word) {
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
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
  EXPECT_FALSE(a->Has("--out"));
  EXPECT_EQ(a->GetOr("--missing", "dflt"), "dflt");
  EXPECT_EQ(&a->spec(), &kTest);
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
  auto d = ParseWords({"--branc=x"});  // a value does not hide the name
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().message(), "unknown option --branc (did you mean '--branch'?)");
}

// Every command answers --help, although no table lists it.
TEST(CliArgs, HelpIsAlwaysAnswered) {
  auto a = ParseWords({"--json", "--help"});
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().message(), kHelpRequested);
  testing::internal::CaptureStdout();
  EXPECT_EQ(UsageError(a.error().message(), kTest), kExitOk);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), Usage(kTest));
  testing::internal::CaptureStderr();
  EXPECT_EQ(UsageError("unknown option --q", kTest), kExitUsage);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ferry: unknown option --q\nusage: ferry test dump FILE"), std::string::npos)
      << err;
}

// The hidden --list-options lists what the parser takes, for tests and tools.
TEST(CliArgs, ListOptionsNamesEveryOption) {
  auto a = ParseWords({"--list-options"});
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().message(), "options: --json --tree --branch --out");
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
  auto d = ParseWords({"--tree", "--json"});  // the next word is the value, whatever it is
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->Get("--tree"), "--json");
  EXPECT_FALSE(d->Has("--json"));
}

constexpr OptionConflict kTestConflicts[] = {{"--json", "--out"}};
constexpr CommandSpec kTestWithConflict{
    .path = "test get",
    .summary = "a command of the tests with two options that exclude each other",
    .options = kOptions,
    .conflicts = kTestConflicts,
    .run = Ok,
};

TEST(CliArgs, ConflictingOptionsAreAUsageErrorNamingBoth) {
  std::vector<const char*> both = {"F", "--out", "D", "--json"};
  auto a = Args::Parse(both, kTestWithConflict);
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().message(), "--json and --out cannot be used together");
  std::vector<const char*> one = {"F", "--out", "D", "--tree", "T"};
  EXPECT_TRUE(Args::Parse(one, kTestWithConflict).has_value());
  // The same words are fine for a command that declares no conflict.
  EXPECT_TRUE(Args::Parse(both, kTest).has_value());
  EXPECT_NE(Usage(kTestWithConflict).find("--json and --out exclude each other."),
            std::string::npos);
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

TEST(CliUsage, NamesEveryOptionWithItsValueHelpAndDefault) {
  const std::string usage = Flat(Usage(kTest));
  EXPECT_EQ(
      usage.rfind("usage: ferry test dump FILE --out DIR [--json] [--tree T] [--branch B]", 0), 0u)
      << usage;
  for (const OptionSpec& o : kOptions) {
    const std::string label = std::string(o.name) + (o.takes_value() ? " " : "")
                              + std::string(o.value) + " " + std::string(o.help);
    EXPECT_NE(usage.find(label), std::string::npos) << label << " in " << usage;
  }
  EXPECT_NE(usage.find("the tree to read (default: Events)"), std::string::npos);
  EXPECT_EQ(usage.find("[--out DIR]"), std::string::npos);  // required: in the synopsis only
  EXPECT_NE(usage.find("a command of the tests"), std::string::npos);
  EXPECT_NE(usage.find("Some notes."), std::string::npos);
}

TEST(CliUsage, GroupsListTheirCommands) {
  EXPECT_EQ(ListedSummary(kTestGroup), "the group of the tests: dump");
  const std::string usage = Usage(kTestGroup);
  EXPECT_NE(usage.find("usage: ferry test dump FILE --out DIR [--json]"), std::string::npos);
  EXPECT_NE(usage.find("\n  dump       a command of the tests\n"), std::string::npos) << usage;
  EXPECT_EQ(kTest.name(), "dump");
  EXPECT_EQ(DisplayName(kTest), "ferry test dump");
}

TEST(CliUsage, RunCommandDispatchesAndRefusesUnknownWords) {
  std::vector<const char*> words = {"dump", "f.root", "--out", "d"};
  EXPECT_EQ(RunCommand(kTestGroup, words), kExitOk);
  testing::internal::CaptureStderr();
  std::vector<const char*> typo = {"dupm"};
  EXPECT_EQ(RunCommand(kTestGroup, typo), kExitUsage);
  std::vector<const char*> bad = {"dump", "--nope"};
  EXPECT_EQ(RunCommand(kTestGroup, bad), kExitUsage);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("unknown command 'test dupm' (did you mean 'dump'?)"), std::string::npos)
      << err;
  EXPECT_NE(err.find("unknown option --nope"), std::string::npos) << err;
  testing::internal::CaptureStdout();
  std::vector<const char*> help = {"--help"};
  EXPECT_EQ(RunCommand(kTestGroup, help), kExitOk);
  EXPECT_EQ(RunCommand(kTestGroup, {}), kExitUsage);  // nothing to run: the help, exit 2
  (void)testing::internal::GetCapturedStdout();
}

// The whole table of the ferry binary: what `--help`, the man pages and the completion show.
TEST(CliCommandTable, EveryCommandIsDocumentedAndReachable) {
  const std::vector<const CommandSpec*> all = AllCommands(kFerryCommand);
  EXPECT_GE(all.size(), 30u);
  std::set<std::string_view> paths;
  for (const CommandSpec* c : all) {
    SCOPED_TRACE(DisplayName(*c));
    EXPECT_TRUE(paths.insert(c->path).second) << "two commands with one path";
    EXPECT_FALSE(c->summary.empty());
    EXPECT_NE(c->is_group(), c->run != nullptr) << "a command is a group or runs";
    EXPECT_TRUE(!c->is_group() || c->options.empty()) << "a group has no options";
    std::set<std::string_view> names;
    const std::string usage = Flat(Usage(*c));
    for (const OptionSpec& o : c->options) {
      EXPECT_TRUE(o.name.starts_with("--") && o.name.size() > 2) << o.name;
      EXPECT_NE(o.name, "--help");
      EXPECT_NE(o.name, "--list-options");
      EXPECT_FALSE(o.help.empty()) << o.name;
      EXPECT_TRUE(names.insert(o.name).second) << "duplicate " << o.name;
      EXPECT_NE(usage.find(std::string(o.name) + (o.takes_value() ? " " : "") + std::string(o.value)
                           + " " + Flat(std::string(o.help))),
                std::string::npos)
          << o.name;
    }
    for (const OptionConflict& x : c->conflicts) {
      // Both sides are options of this command, and the help says they exclude each other.
      EXPECT_TRUE(names.count(x.a) && names.count(x.b)) << x.a << " / " << x.b;
      EXPECT_NE(usage.find(std::string(x.a) + " and " + std::string(x.b) + " exclude each other"),
                std::string::npos);
    }
    std::istringstream lines(Usage(*c));
    for (std::string line; std::getline(lines, line);) {
      EXPECT_LE(line.size(), 100u) << line;
    }
    for (const CommandSpec* sub : c->subcommands) {
      // Reachable: RunCommand picks a subcommand by its name, the last word of its path.
      EXPECT_EQ(std::string(sub->path),
                c->path.empty() ? std::string(sub->name())
                                : std::string(c->path) + " " + std::string(sub->name()));
      EXPECT_NE(ListedSummary(*c).find(std::string(sub->name())), std::string::npos);
      EXPECT_NE(Usage(*c).find("  " + std::string(sub->name()) + " "), std::string::npos);
    }
  }
  for (std::string_view top :
       {"root", "gen", "analyze", "store", "send", "recv", "cache", "proxy"}) {
    EXPECT_TRUE(paths.count(top)) << top;
  }
  EXPECT_TRUE(paths.count("cache replica build"));
}

}  // namespace
}  // namespace ferry::cli
