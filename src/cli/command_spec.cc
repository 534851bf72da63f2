#include "cli/command_spec.h"

#include <algorithm>
#include <cstdio>

#include "base/strings.h"
#include "cli/args.h"

namespace ferry::cli {
namespace {

constexpr size_t kWidth = 100;
// Option labels up to this wide share the help's column; a longer one gets a line of its own.
constexpr size_t kMaxLabel = 24;
// Where a command list's summaries start: "  replica    ...", as `ferry --help` always had it.
constexpr size_t kSummaryColumn = 13;

// Appends `items` separated by spaces, breaking before an item that would pass kWidth; each
// continuation line starts at column `indent`.
void AppendWrapped(std::string& out,
                   size_t column,
                   size_t indent,
                   const std::vector<std::string>& items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && column + 1 + items[i].size() > kWidth) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (i > 0) {
      out += ' ';
      ++column;
    }
    out += items[i];
    column += items[i].size();
  }
}

// The space-separated words of `text` (runs of spaces are one separator).
std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  for (std::string_view w : Split(text, ' ')) {
    if (!w.empty()) {
      words.emplace_back(w);
    }
  }
  return words;
}

// "--dir DIR" or "--json".
std::string Label(const OptionSpec& o) {
  std::string label(o.name);
  if (o.takes_value()) {
    label += " " + std::string(o.value);
  }
  return label;
}

// Whether the synopsis names the option already ("--dir DIR" as a required option).
bool InSynopsis(const CommandSpec& spec, std::string_view name) {
  for (const std::string& w : Words(spec.synopsis)) {
    std::string_view word = w;
    while (!word.empty() && (word.front() == '(' || word.front() == '[')) {
      word.remove_prefix(1);
    }
    if (word == name) {
      return true;
    }
  }
  return false;
}

// A leaf's usage line, or a nested group's "ferry cache replica build|status|drop ...".
std::string FormLine(const CommandSpec& spec, size_t indent) {
  const std::string name = DisplayName(spec);
  std::vector<std::string> items = {name};
  if (spec.is_group()) {
    std::string subs;
    for (const CommandSpec* sub : spec.subcommands) {
      subs += (subs.empty() ? "" : "|") + std::string(sub->name());
    }
    items.push_back(subs + " ...");
  } else {
    for (std::string& w : Words(spec.synopsis)) {
      items.push_back(std::move(w));
    }
    for (const OptionSpec& o : spec.options) {
      if (!InSynopsis(spec, o.name)) {
        items.push_back("[" + Label(o) + "]");
      }
    }
  }
  std::string out;
  AppendWrapped(out, indent, indent + name.size() + 1, items);
  return out;
}

void AppendOptions(std::string& out, std::span<const OptionSpec> options) {
  size_t column = 0;
  for (const OptionSpec& o : options) {
    column = std::max(column, std::min(Label(o).size(), kMaxLabel));
  }
  column += 4;  // two spaces before the label, two after
  for (const OptionSpec& o : options) {
    const std::string label = "  " + Label(o);
    out += label;
    if (label.size() + 2 > column) {
      out += "\n" + std::string(column, ' ');
    } else {
      out += std::string(column - label.size(), ' ');
    }
    std::vector<std::string> words = Words(o.help);
    if (!o.default_value.empty()) {
      std::vector<std::string> more = Words("(default: " + std::string(o.default_value) + ")");
      words.insert(words.end(), more.begin(), more.end());
    }
    AppendWrapped(out, column, column, words);
    out += "\n";
  }
}

// "  name       summary" per subcommand. One line each as far as the width allows: scripts
// (gen_docs.py, the help test) read the list.
void AppendCommands(std::string& out, const CommandSpec& group) {
  for (const CommandSpec* sub : group.subcommands) {
    std::string line = "  " + std::string(sub->name());
    line.resize(std::max(line.size() + 1, kSummaryColumn), ' ');
    AppendWrapped(line, line.size(), kSummaryColumn, Words(ListedSummary(*sub)));
    out += line + "\n";
  }
}

void ListCommands(const CommandSpec& top) {
  for (const CommandSpec* c : AllCommands(top)) {
    std::string line(c->path);
    line += "\t";
    for (const OptionSpec& o : c->options) {
      line += std::string(o.name) + (&o == &c->options.back() ? "" : " ");
    }
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

std::string_view CommandSpec::name() const {
  if (path.empty()) {
    return "ferry";
  }
  const size_t space = path.rfind(' ');
  return space == std::string_view::npos ? path : path.substr(space + 1);
}

std::string DisplayName(const CommandSpec& spec) {
  return spec.path.empty() ? "ferry" : "ferry " + std::string(spec.path);
}

std::string ListedSummary(const CommandSpec& spec) {
  std::string out(spec.summary);
  if (spec.is_group()) {
    out += ":";
    for (const CommandSpec* sub : spec.subcommands) {
      out += " " + std::string(sub->name()) + (sub == spec.subcommands.back() ? "" : ",");
    }
  }
  return out;
}

std::string Synopsis(const CommandSpec& spec, size_t indent) {
  if (spec.path.empty()) {
    return "ferry <command> [args]";
  }
  if (!spec.is_group()) {
    return FormLine(spec, indent);
  }
  std::string out;
  for (const CommandSpec* sub : spec.subcommands) {
    out += (out.empty() ? "" : "\n" + std::string(indent, ' ')) + FormLine(*sub, indent);
  }
  return out;
}

std::string Usage(const CommandSpec& spec) {
  std::string out;
  if (spec.path.empty()) {
    out = "ferry - " + std::string(spec.summary) + "\n\nusage: " + Synopsis(spec, 7) + "\n";
  } else {
    out = "usage: " + Synopsis(spec, 7) + "\n\n";
    AppendWrapped(out, 0, 0, Words(spec.summary));
    out += "\n";
  }
  if (!spec.options.empty()) {
    out += "\noptions:\n";
    AppendOptions(out, spec.options);
  }
  for (const OptionConflict& c : spec.conflicts) {
    out += "  " + std::string(c.a) + " and " + std::string(c.b) + " exclude each other.\n";
  }
  if (spec.is_group()) {
    out += "\ncommands:\n";
    AppendCommands(out, spec);
  }
  if (!spec.notes.empty()) {
    out += "\n" + std::string(spec.notes) + "\n";
  }
  if (spec.is_group()) {
    out += "\nRun '" + DisplayName(spec) + " <command> --help' for the options of a command.\n";
  }
  return out;
}

std::vector<const CommandSpec*> AllCommands(const CommandSpec& top) {
  std::vector<const CommandSpec*> all = {&top};
  for (const CommandSpec* sub : top.subcommands) {
    for (const CommandSpec* c : AllCommands(*sub)) {
      all.push_back(c);
    }
  }
  return all;
}

int RunCommand(const CommandSpec& spec, std::span<const char* const> words) {
  if (!spec.is_group()) {
    auto args = Args::Parse(words, spec);
    if (!args) {
      return UsageError(args.error().message(), spec);
    }
    return spec.run(*args);
  }
  if (words.empty()) {
    std::fputs(Usage(spec).c_str(), stdout);
    return kExitUsage;
  }
  const std::string_view word = words[0];
  if (word == "--help" || word == "-h") {
    std::fputs(Usage(spec).c_str(), stdout);
    return kExitOk;
  }
  if (word == "--list-commands") {
    ListCommands(spec);
    return kExitOk;
  }
  std::vector<std::string_view> names;
  for (const CommandSpec* sub : spec.subcommands) {
    if (sub->name() == word) {
      return RunCommand(*sub, words.subspan(1));
    }
    names.push_back(sub->name());
  }
  const std::string full =
      spec.path.empty() ? std::string(word) : std::string(spec.path) + " " + std::string(word);
  return UsageError(
      "unknown command '" + full + "'" + DidYouMean(word, std::span<const std::string_view>(names)),
      spec);
}

}  // namespace ferry::cli
