// ferry: one binary, one file per subcommand (see commands.h).
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/version.h"
#include "cli/args.h"
#include "cli/commands.h"

namespace {

struct Command {
  std::string_view name;
  int (*run)(std::span<const char* const>);
  std::string_view help;
};

constexpr Command kCommands[] = {
    {"root", ferry::cli::RunRoot, "inspect ROOT files: ls, dump, baskets"},
    {"gen", ferry::cli::RunGen, "generate NanoAOD-like datasets: gen nanoaod"},
    {"analyze", ferry::cli::RunAnalyze,
     "run an analysis (agc: the AGC ttbar analysis) over files or root:// URLs"},
    {"store", ferry::cli::RunStore, "event store: convert, append, get, scan, info, verify"},
    {"send", ferry::cli::RunSend, "send files and directories to a ferry recv daemon"},
    {"recv", ferry::cli::RunRecv, "receive transfers from ferry send (daemon)"},
    {"cache", ferry::cli::RunCache,
     "XRootD client cache: enable, disable, status, ls, stats, verify, evict, clear, pin, "
     "replica"},
    {"proxy", ferry::cli::RunProxy,
     "site cache inside an xrootd server: config (print its configuration), run"},
};

void PrintHelp() {
  std::printf(
      "ferry - remote HEP data at the speed of the hardware\n\nusage: ferry <command> "
      "[args]\n\ncommands:\n");
  for (const Command& c : kCommands) {
    std::printf("  %-10.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                static_cast<int>(c.help.size()), c.help.data());
  }
  std::printf("\nRun 'ferry <command> --help' for the options of a command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    PrintHelp();
    return argc < 2 ? ferry::cli::kExitUsage : ferry::cli::kExitOk;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    const std::string git = ferry::GitDescription();
    std::printf("ferry %s%s\n", ferry::Version(), git.empty() ? "" : (" (" + git + ")").c_str());
    return 0;
  }
  std::string_view name = argv[1];
  std::span<const char* const> rest(argv + 2, static_cast<size_t>(argc - 2));
  for (const Command& c : kCommands) {
    if (c.name == name) {
      try {
        return c.run(rest);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ferry: internal error: %s\n", e.what());
        return ferry::cli::kExitBadInput;
      }
    }
  }
  std::vector<std::string_view> names;
  for (const Command& c : kCommands) {
    names.push_back(c.name);
  }
  const std::string hint = ferry::cli::DidYouMean(name, std::span<const std::string_view>(names));
  std::fprintf(stderr, "ferry: unknown command '%s'%s (try 'ferry --help')\n", argv[1],
               hint.c_str());
  return ferry::cli::kExitUsage;
}
