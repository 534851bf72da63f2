// The store directory as writers see it (docs/format/store.md sections 8 and 12): the one
// writer's lock, reading the current manifest, publishing a new one atomically, and removing
// the files no manifest names. Used by convert/append and by the column-copy writers; readers
// never take the lock.
#pragma once

#include <set>
#include <string>

#include "base/fd.h"
#include "base/result.h"
#include "store/format.h"

namespace ferry::store {

// One writer at a time per store directory: an advisory flock on DIR/.lock, taken without
// waiting. kIo "another convert or append is writing DIR" when it is held. The lock lasts as
// long as the returned Fd.
Result<Fd> LockStore(const std::string& dir);

// DIR/MANIFEST, parsed (errors name the path).
Result<Manifest> ReadManifest(const std::string& dir);

// Written aside, fsynced, renamed over MANIFEST, directory fsynced: readers see the old
// manifest or the new one, never a mix, and a crash leaves one of them. *bytes: its size.
Status PublishManifest(const std::string& dir, Manifest& m, uint64_t* bytes);

// The shard and copy files a manifest names (m may be null: none), and the largest shard
// generation among them.
std::set<std::string> NamedFiles(const Manifest* m, uint32_t* max_generation);

// Removes shard and copy files (and a stale manifest draft) that keep does not name: the
// leftovers of a killed write, or files superseded before the previous write.
void RemoveUnnamed(const std::string& dir, const std::set<std::string>& keep);

Status SyncDir(const std::string& dir);

}  // namespace ferry::store
