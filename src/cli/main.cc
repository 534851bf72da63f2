// ferry: one binary; its commands are the table of commands.h (one cmd_<name>.cc each).
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>

#include "base/version.h"
#include "cli/args.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) {
    const std::string git = ferry::GitDescription();
    std::printf("ferry %s%s\n", ferry::Version(), git.empty() ? "" : (" (" + git + ")").c_str());
    return 0;
  }
  try {
    return ferry::cli::RunCommand(
        ferry::cli::kFerryCommand,
        std::span<const char* const>(argv + 1, static_cast<size_t>(argc - 1)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ferry: internal error: %s\n", e.what());
    return ferry::cli::kExitBadInput;
  }
}
