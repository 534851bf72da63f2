// The ferry commands: the table of each lives in its cmd_<name>.cc (command_spec.h), with the
// functions that run its subcommands; commands.cc puts them under the top level. A run function
// returns the process exit code (0 ok, 1 bad input, 2 usage error).
#pragma once

#include "cli/command_spec.h"

namespace ferry::cli {

extern const CommandSpec kRootCommand;           // cmd_root.cc
extern const CommandSpec kGenCommand;            // cmd_gen.cc
extern const CommandSpec kAnalyzeCommand;        // cmd_analyze.cc
extern const CommandSpec kStoreCommand;          // cmd_store.cc
extern const CommandSpec kStoreCopiesCommand;    // cmd_store_copies.cc: `ferry store copies`
extern const CommandSpec kSendCommand;           // cmd_send.cc
extern const CommandSpec kRecvCommand;           // cmd_recv.cc
extern const CommandSpec kCacheCommand;          // cmd_cache.cc
extern const CommandSpec kCacheReplicaCommand;   // cmd_cache_replica.cc: `ferry cache replica`
extern const CommandSpec kCacheRekeyCommand;     // cmd_cache_rekey.cc: `ferry cache rekey`
extern const CommandSpec kCacheDoctorCommand;    // cmd_cache_doctor.cc: `ferry cache doctor`
extern const CommandSpec kCacheNetBenchCommand;  // cmd_cache_doctor.cc: `ferry cache netbench`
extern const CommandSpec kProxyCommand;          // cmd_proxy.cc
extern const CommandSpec kProxyDoctorCommand;    // cmd_proxy_doctor.cc: `ferry proxy doctor`
// The options of `ferry proxy run` (cmd_proxy.cc), which `proxy doctor` takes too.
extern const std::span<const OptionSpec> kProxyRunOptions;

// `ferry` itself: the group of all the commands above.
extern const CommandSpec kFerryCommand;

}  // namespace ferry::cli
