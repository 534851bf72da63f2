// Minimal command-line parsing for ferry's subcommands against their table (command_spec.h):
// --opt VALUE, --opt=VALUE, --flag, repeated options, positionals, and "--" to end options.
// Unknown options are usage errors.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cli/command_spec.h"

namespace ferry::cli {

// Exit codes of the ferry binary.
constexpr int kExitOk = 0;
constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;

// The message of the error Parse returns for "--help" (never an option of a table): UsageError
// then prints the usage on stdout and returns kExitOk, so every command answers --help without
// running (`ferry cache clear --help` must not clear the cache).
inline constexpr std::string_view kHelpRequested = "help requested";
// The hidden option --list-options makes Parse fail with this prefix and the option names;
// UsageError prints them on stdout (exit 0), for tests and tools that ask the binary itself.
inline constexpr std::string_view kOptionsListed = "options:";

class Args {
 public:
  // args: the words after the subcommand; the options are those of `spec`.
  static Result<Args> Parse(std::span<const char* const> args, const CommandSpec& spec);

  bool Has(std::string_view name) const { return opts_.count(std::string(name)) > 0; }
  std::optional<std::string> Get(std::string_view name) const;
  std::string GetOr(std::string_view name, std::string fallback) const;
  const std::vector<std::string>& All(std::string_view name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // The command these words were parsed for: its usage goes with a usage error.
  const CommandSpec& spec() const { return *spec_; }

 private:
  const CommandSpec* spec_ = nullptr;
  std::map<std::string, std::vector<std::string>, std::less<>> opts_;
  std::vector<std::string> positional_;
};

// " (did you mean 'x'?)" for the candidate closest to `word` (edit distance with transpositions,
// at most 1 for words of up to 4 characters, 2 up to 8, 3 beyond; a unique prefix also counts),
// or "" when none is close. Ties go to the first candidate.
std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates);
std::string DidYouMean(std::string_view word, std::initializer_list<std::string_view> candidates);

// Prints "ferry: <message>" and the usage lines of `spec` to stderr and returns kExitUsage; for
// kHelpRequested, the whole help (Usage) to stdout, returning kExitOk.
int UsageError(std::string_view message, const CommandSpec& spec);
// Prints the error with its context chain to stderr and returns kExitBadInput.
int ReportError(const Error& error);

}  // namespace ferry::cli
