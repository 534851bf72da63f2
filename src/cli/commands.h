// The ferry subcommands. Each lives in its own cmd_<name>.cc and takes the words after its
// name; it returns the process exit code (0 ok, 1 bad input, 2 usage error).
#pragma once

#include <span>

namespace ferry::cli {

int RunRoot(std::span<const char* const> args);
int RunGen(std::span<const char* const> args);
int RunAnalyze(std::span<const char* const> args);
int RunStore(std::span<const char* const> args);
int RunSend(std::span<const char* const> args);
int RunRecv(std::span<const char* const> args);
int RunCache(std::span<const char* const> args);
// `ferry cache replica ...` (cmd_cache_replica.cc).
int RunCacheReplica(std::span<const char* const> args);
int RunProxy(std::span<const char* const> args);

}  // namespace ferry::cli
