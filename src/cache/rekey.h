// Rotation of an encrypted cache's master key (`ferry cache rekey`): each entry's data key is
// unwrapped with the old master key and wrapped with the new one, and the index republished
// (docs/format/page-store.md, "Encryption at rest"). Pages are never rewritten.
//
// Safe while other processes read and fill the entry: the index is republished under the
// entry's write lock like any other index update (temp file, fsync, rename), readers keep the
// data key they unwrapped at open, and a writer adopts the new wrapping when it merges the
// published index before its own next publish (Entry::MergeFrom).
#pragma once

#include "base/result.h"
#include "cache/entry_store.h"
#include "cache/page_seal.h"

namespace ferry::cache {

enum class RekeyOutcome {
  kRewrapped,    // was under old_key, now under new_key
  kAlready,      // already under new_key (a rekey run twice, or resumed)
  kUnencrypted,  // a plaintext entry: nothing to rewrap
};

// kPermission when the entry is under a third key; kNotFound when it has no index; the lock's
// error (kTimeout) when the write lock stays busy for lock_timeout_ms.
Result<RekeyOutcome> RekeyEntry(const EntryPaths& paths,
                                const MasterKey& old_key,
                                const MasterKey& new_key,
                                int lock_timeout_ms = 2000);

}  // namespace ferry::cache
