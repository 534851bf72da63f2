// Shared by the `ferry store` commands (cmd_store.cc, cmd_store_copies.cc).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "base/json_writer.h"
#include "base/result.h"
#include "cli/args.h"
#include "store/copies.h"
#include "store/store.h"

namespace ferry::cli {

// DIR may be a root:// URL: the store's files are then read through XrdCl (and the ferry
// cache plug-in when it is enabled), loaded only for such URLs. --mmap selects mmap reads.
Result<std::unique_ptr<store::Store>> OpenStore(const std::string& dir, const Args& args);

// "copies": [{column, run, generation, file, bytes, last_scanned}] (last_scanned: unix
// seconds, 0 when unknown, e.g. remotely).
void WriteCopyList(JsonWriter& w, std::span<const store::CopyInfo> copies);

}  // namespace ferry::cli
