// Minimal command-line parsing for ferry's subcommands: --opt VALUE, --opt=VALUE, --flag,
// repeated options, positionals, and "--" to end options. Unknown options are usage errors.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ferry::cli {

// Exit codes of the ferry binary.
constexpr int kExitOk = 0;
constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;

struct OptSpec {
  std::string_view name;  // "--json"
  bool takes_value = false;
};

class Args {
 public:
  // args: the words after the subcommand.
  static Result<Args> Parse(std::span<const char* const> args,
                            std::initializer_list<OptSpec> specs);

  bool Has(std::string_view name) const { return opts_.count(std::string(name)) > 0; }
  std::optional<std::string> Get(std::string_view name) const;
  std::string GetOr(std::string_view name, std::string fallback) const;
  const std::vector<std::string>& All(std::string_view name) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> opts_;
  std::vector<std::string> positional_;
};

// Prints "ferry: <message>" to stderr and returns kExitUsage.
int UsageError(std::string_view message, std::string_view usage);
// Prints the error with its context chain to stderr and returns kExitBadInput.
int ReportError(const Error& error);

}  // namespace ferry::cli
