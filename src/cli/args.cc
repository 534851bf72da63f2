#include "cli/args.h"

#include <cstdio>

namespace ferry::cli {

Result<Args> Args::Parse(std::span<const char* const> args, std::initializer_list<OptSpec> specs) {
  Args out;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (options_done || !a.starts_with("--") || a == "-") {
      out.positional_.emplace_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    std::string_view name = a;
    std::optional<std::string_view> value;
    if (size_t eq = a.find('='); eq != std::string_view::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    const OptSpec* spec = nullptr;
    for (const OptSpec& s : specs) {
      if (s.name == name) {
        spec = &s;
      }
    }
    if (spec == nullptr) {
      return InvalidArgumentError("unknown option " + std::string(name));
    }
    if (spec->takes_value && !value) {
      if (i + 1 >= args.size()) {
        return InvalidArgumentError("option " + std::string(name) + " needs a value");
      }
      value = args[++i];
    }
    if (!spec->takes_value && value) {
      return InvalidArgumentError("option " + std::string(name) + " takes no value");
    }
    out.opts_[std::string(name)].emplace_back(value.value_or(""));
  }
  return out;
}

std::optional<std::string> Args::Get(std::string_view name) const {
  auto it = opts_.find(name);
  if (it == opts_.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second.back();
}

std::string Args::GetOr(std::string_view name, std::string fallback) const {
  auto v = Get(name);
  return v ? *v : std::move(fallback);
}

const std::vector<std::string>& Args::All(std::string_view name) const {
  static const std::vector<std::string> kEmpty;
  auto it = opts_.find(name);
  return it == opts_.end() ? kEmpty : it->second;
}

int UsageError(std::string_view message, std::string_view usage) {
  std::fprintf(stderr, "ferry: %.*s\n", static_cast<int>(message.size()), message.data());
  if (!usage.empty()) {
    std::fprintf(stderr, "usage: %.*s\n", static_cast<int>(usage.size()), usage.data());
  }
  return kExitUsage;
}

int ReportError(const Error& error) {
  std::fprintf(stderr, "ferry: error: %s\n", error.ToString().c_str());
  return kExitBadInput;
}

}  // namespace ferry::cli
