// The command table of the ferry binary: every command, subcommand and option is declared once,
// as constant data, and the parser (args.h), `--help`, the usage on errors, the man pages and the
// bash completion (scripts/pkg/gen_docs.py, through the hidden --list-commands) are all made
// from it. So no help text can name an option the parser does not take, and no list of
// subcommands can miss one.
//
// A command is a leaf (it has options and a `run` function) or a group (it has subcommands and
// picks one by the next word). Tables are static arrays of string_views: nothing is allocated
// until a command line is parsed or a help is printed.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::cli {

class Args;

struct OptionSpec {
  std::string_view name;                // "--dir"
  std::string_view value;               // "DIR" when the option takes a value; empty for a flag
  std::string_view help;                // one sentence or two, wrapped when printed
  std::string_view default_value = {};  // printed as "(default: ...)" after the help

  constexpr bool takes_value() const { return !value.empty(); }
};

// Two options of one command that contradict each other (`cache enable --system --conf-dir D`:
// which conf directory?). Giving both is a usage error naming them, not a silent pick.
struct OptionConflict {
  std::string_view a;
  std::string_view b;
};

struct CommandSpec {
  std::string_view path;     // the words after "ferry": "cache replica build"; "" for ferry
  std::string_view summary;  // one line, in the command lists and atop its help
  // What follows the command words in the usage line besides the optional options: positionals
  // and required options ("DIR INPUT.root...", "--dir DIR"). Options named here are not
  // repeated as [--opt VALUE].
  std::string_view synopsis = {};
  std::span<const OptionSpec> options = {};
  std::string_view notes = {};  // printed after the options as written (own line breaks)
  std::span<const OptionConflict> conflicts = {};        // listed in the help after the options
  int (*run)(const Args& args) = nullptr;                // a leaf: runs the parsed command
  std::span<const CommandSpec* const> subcommands = {};  // a group: its commands, in order

  bool is_group() const { return !subcommands.empty(); }
  // The last word of the path ("build"); "ferry" for the top level.
  std::string_view name() const;
};

// The options of `a` then those of `b`, for a command that takes another's and more.
template <size_t N, size_t M>
constexpr std::array<OptionSpec, N + M> JoinOptions(const OptionSpec (&a)[N],
                                                    const OptionSpec (&b)[M]) {
  std::array<OptionSpec, N + M> out{};
  for (size_t i = 0; i < N; ++i) {
    out[i] = a[i];
  }
  for (size_t i = 0; i < M; ++i) {
    out[N + i] = b[i];
  }
  return out;
}

// "ferry cache replica build".
std::string DisplayName(const CommandSpec& spec);
// The summary as command lists print it: a group's with its subcommands appended ("XRootD
// client cache: enable, disable, ..."), so a list can never omit one.
std::string ListedSummary(const CommandSpec& spec);
// The usage lines: a leaf's form with every option ("ferry cache pin URL [--dir DIR] ..."); for
// a group, one line per subcommand (a nested group as "ferry cache replica build|status|drop
// ..."). Wrapped at 100 columns, continuation lines aligned after the command words; `indent`
// is the column the first line starts at.
std::string Synopsis(const CommandSpec& spec, size_t indent);
// The whole --help text: usage lines, summary, options (aligned, each with its help and
// default) or subcommands, notes.
std::string Usage(const CommandSpec& spec);

// Runs a command on the words after its name: a group dispatches on the first word (an unknown
// one is a usage error with a "did you mean"), a leaf parses its options (args.h) and runs.
// --help prints Usage and exits 0; a group without words prints it and exits 2. The hidden
// --list-commands (given to a group) prints every command under it with its options, one per
// line: "cache replica build\t--dir --conf-dir ...".
int RunCommand(const CommandSpec& spec, std::span<const char* const> words);

// Every command of the table under `top`, depth first, `top` included.
std::vector<const CommandSpec*> AllCommands(const CommandSpec& top);

}  // namespace ferry::cli
