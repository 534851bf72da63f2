#include "cli/args.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace ferry::cli {
namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// neighbours, the typos people make on a keyboard.
size_t EditDistance(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  const size_t m = b.size();
  std::vector<size_t> d((n + 1) * (m + 1));
  auto at = [&](size_t i, size_t j) -> size_t& {
    return d[i * (m + 1) + j];
  };
  for (size_t i = 0; i <= n; ++i) {
    at(i, 0) = i;
  }
  for (size_t j = 0; j <= m; ++j) {
    at(0, j) = j;
  }
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(n, m);
}

}  // namespace

namespace {

// --help and --list-options are answered by every command and listed by none (see
// kHelpRequested); anything else not in the table is a usage error with a suggestion.
Error UnknownOption(std::string_view name, const CommandSpec& spec) {
  if (name == "--help") {
    return {ErrorCode::kCancelled, std::string(kHelpRequested)};
  }
  if (name == "--list-options") {
    std::string list(kOptionsListed);
    for (const OptionSpec& o : spec.options) {
      list += " " + std::string(o.name);
    }
    return {ErrorCode::kCancelled, list};
  }
  std::vector<std::string_view> names;
  for (const OptionSpec& o : spec.options) {
    names.push_back(o.name);
  }
  names.emplace_back("--help");
  return InvalidArgumentError("unknown option " + std::string(name)
                              + DidYouMean(name, std::span<const std::string_view>(names)));
}

}  // namespace

std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates) {
  // Compared without the leading dashes, so "--jsn" and "jsn" find "--json" alike.
  auto bare = [](std::string_view s) {
    while (s.starts_with('-')) {
      s.remove_prefix(1);
    }
    return s;
  };
  const std::string_view w = bare(word);
  if (w.empty()) {
    return "";
  }
  const size_t limit = w.size() <= 4 ? 1 : w.size() <= 8 ? 2 : 3;
  std::string_view best;
  size_t best_distance = limit + 1;
  std::string_view prefixed;
  size_t prefix_count = 0;
  for (std::string_view c : candidates) {
    const size_t dist = EditDistance(w, bare(c));
    if (dist < best_distance) {
      best = c;
      best_distance = dist;
    }
    if (w.size() >= 2 && bare(c).starts_with(w)) {
      prefixed = c;
      ++prefix_count;
    }
  }
  if (best.empty() && prefix_count == 1) {
    best = prefixed;
  }
  return best.empty() ? "" : " (did you mean '" + std::string(best) + "'?)";
}

std::string DidYouMean(std::string_view word, std::initializer_list<std::string_view> candidates) {
  return DidYouMean(word, std::span<const std::string_view>(candidates.begin(), candidates.size()));
}

Result<Args> Args::Parse(std::span<const char* const> args, const CommandSpec& spec) {
  Args out;
  out.spec_ = &spec;
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
    const OptionSpec* option = nullptr;
    for (const OptionSpec& o : spec.options) {
      if (o.name == name) {
        option = &o;
      }
    }
    if (option == nullptr) {
      return UnknownOption(name, spec);
    }
    if (option->takes_value() && !value) {
      if (i + 1 >= args.size()) {
        return InvalidArgumentError("option " + std::string(name) + " needs a value");
      }
      value = args[++i];
    }
    if (!option->takes_value() && value) {
      return InvalidArgumentError("option " + std::string(name) + " takes no value");
    }
    out.opts_[std::string(name)].emplace_back(value.value_or(""));
  }
  for (const OptionConflict& c : spec.conflicts) {
    if (out.Has(c.a) && out.Has(c.b)) {
      return InvalidArgumentError(std::string(c.a) + " and " + std::string(c.b)
                                  + " cannot be used together");
    }
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

int UsageError(std::string_view message, const CommandSpec& spec) {
  if (message == kHelpRequested) {
    std::fputs(Usage(spec).c_str(), stdout);
    return kExitOk;
  }
  if (message.starts_with(kOptionsListed)) {
    std::printf("%.*s\n", static_cast<int>(message.size()), message.data());
    return kExitOk;
  }
  // The usage lines only: the whole help of a group would bury the message.
  std::fprintf(stderr, "ferry: %.*s\nusage: %s\nRun '%s --help' for more.\n",
               static_cast<int>(message.size()), message.data(), Synopsis(spec, 7).c_str(),
               DisplayName(spec).c_str());
  return kExitUsage;
}

int ReportError(const Error& error) {
  std::fprintf(stderr, "ferry: error: %s\n", error.ToString().c_str());
  return kExitBadInput;
}

}  // namespace ferry::cli
