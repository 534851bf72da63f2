// Verification of cache entries on disk (`ferry cache verify`, crash tests).
//
// Reads every full page and fragment an index names and checks its CRC32C (an encrypted entry's:
// opens it with the master key, when given). With `repair`, an
// entry with bad pages gets a new index without them (published under the entry's write lock,
// so it is safe while other processes use the entry); an entry whose index does not decode is
// removed. Never modifies anything without `repair`. An entry's replica is checked by the replica
// tier (ReplicaHooks::Verify) when one is given.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "cache/entry_store.h"
#include "cache/page_seal.h"
#include "cache/replica_hooks.h"

namespace ferry::cache {

struct VerifyReport {
  std::string url;
  bool index_ok = false;
  std::string index_error;  // when !index_ok
  uint64_t pages_ok = 0;
  uint64_t pages_bad = 0;  // full pages whose bytes do not match their CRC
  uint64_t fragments_ok = 0;
  uint64_t fragments_bad = 0;
  uint64_t held_bytes = 0;
  // An encrypted entry whose pages could not be checked: no master key given, or another one
  // (the reason is in `sealed_note`). Not bad: the key's holder can check it.
  bool sealed_unchecked = false;
  std::string sealed_note;
  uint64_t garbage_bytes = 0;  // allocated bytes the index does not name (fragment log, data)
  // Replica tier (docs/format/replica.md), filled by ReplicaHooks::Verify: a manifest that does
  // not decode, or extents whose bytes fail their CRC, make the replica bad (repair removes it:
  // it is rebuilt later); a replica of an older copy of the file is stale, not bad (the next
  // build removes it).
  bool has_replica = false;
  bool replica_bad = false;
  bool replica_stale = false;
  std::string replica_error;
  uint64_t replica_extents_ok = 0;
  uint64_t replica_extents_bad = 0;
  bool repaired = false;
  bool bad() const { return !index_ok || pages_bad > 0 || fragments_bad > 0 || replica_bad; }
};

// `key`: the master key of an encrypted cache (pages of encrypted entries are opened with it);
// null checks only unencrypted entries' pages. `replicas`: the replica tier that checks the
// entry's replica (null: replicas are not checked).
Result<VerifyReport> VerifyEntry(const EntryPaths& paths,
                                 bool repair,
                                 int lock_timeout_ms = 2000,
                                 const MasterKey* key = nullptr,
                                 const ReplicaHooks* replicas = nullptr);

}  // namespace ferry::cache
