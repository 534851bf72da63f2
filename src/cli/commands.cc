#include "cli/commands.h"

namespace ferry::cli {
namespace {

constexpr const CommandSpec* kCommands[] = {
    &kRootCommand, &kGenCommand,  &kAnalyzeCommand, &kStoreCommand,
    &kSendCommand, &kRecvCommand, &kCacheCommand,   &kProxyCommand,
};

}  // namespace

constexpr CommandSpec kFerryCommand{
    .path = "",
    .summary = "remote HEP data at the speed of the hardware",
    .subcommands = kCommands,
};

}  // namespace ferry::cli
