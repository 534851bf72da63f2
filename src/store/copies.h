// Column copies, the writer's side (docs/format/store.md section 12): the store's conf, the
// publication of copies a scan built, dropping copies, and the budget.
//
// DIR/store.conf is optional text, one `key = value` per line, '#' starts a comment:
//   column_copies = auto | off          auto: every local scan builds the copies it lacks
//   column_copies_budget = 15% | 2G     copies' total size bound (default 15% of the shards)
// Unknown keys and bad values are kInvalidArgument naming the line.
//
// Every function that changes the copy table takes the store's writer lock (a Fd from
// LockStore) and publishes a new manifest; no shard file is ever written. "Last scanned" is
// the copy file's modification time, set by each local scan that reads the copy (TouchCopy).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "store/format.h"

namespace ferry::store {

constexpr const char* kStoreConfName = "store.conf";
constexpr double kDefaultCopiesBudgetFraction = 0.15;

struct CopiesConf {
  bool auto_build = false;
  std::optional<uint64_t> budget_bytes;  // set: an absolute budget
  double budget_fraction = kDefaultCopiesBudgetFraction;
  // The budget in bytes for a store whose shards total shard_bytes.
  uint64_t Budget(uint64_t shard_bytes) const;
};
Result<CopiesConf> ParseCopiesConf(std::string_view text);
// DIR/store.conf (the defaults when there is none). Errors name the file.
Result<CopiesConf> ReadCopiesConf(const std::string& dir);

// A copy file that a scan wrote and fsynced, not yet named by a manifest.
struct BuiltCopy {
  CopyEntry entry;
  uint32_t replaces = 0;  // id of a copy of the same (run, column) found corrupt, or 0
};

struct CopyInfo {
  CopyEntry entry;
  std::string column;
  int64_t last_scanned = 0;  // unix seconds (the file's mtime); 0 when it cannot be read
};

// What a publication changed.
struct CopiesChange {
  std::vector<CopyEntry> added;
  std::vector<CopyEntry> evicted;    // dropped for the budget, least recently scanned first
  std::vector<CopyEntry> discarded;  // built but not published (their shard was replaced)
  uint64_t budget = 0;
  uint64_t copy_bytes = 0;  // after the change
};

// Under the lock (held by the caller): re-reads the manifest, drops the copies of ids in drop
// (found corrupt), adds the built copies whose shard is still current (others' files are
// removed), drops copies past the budget, publishes and removes the files no longer named.
Result<CopiesChange> PublishCopies(const std::string& dir,
                                   std::span<const BuiltCopy> built,
                                   std::span<const uint32_t> drop = {});
// Takes the lock, removes the copies of the given columns (all runs), publishes.
Result<CopiesChange> DropCopies(const std::string& dir, std::span<const int32_t> columns);
// The copies a manifest names, with their last-scanned times (local stores; 0 remotely).
std::vector<CopyInfo> ListCopies(const std::string& dir, const Manifest& m, bool local);
// Sets a copy file's modification time to now (best effort: a read-only store keeps its
// times).
void TouchCopy(const std::string& path);

}  // namespace ferry::store
