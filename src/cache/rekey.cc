#include "cache/rekey.h"

#include "cache/lock_file.h"

namespace ferry::cache {

Result<RekeyOutcome> RekeyEntry(const EntryPaths& paths,
                                const MasterKey& old_key,
                                const MasterKey& new_key,
                                int lock_timeout_ms) {
  // The write lock orders this publish with every writer's: none can publish an index that
  // still has the old wrapping after ours without first merging ours.
  LockFile lock = FERRY_TRY(LockFile::Open(paths.lock()));
  FERRY_TRY(lock.Lock(kWriteLockByte, /*exclusive=*/true, lock_timeout_ms));
  PageIndex index = FERRY_TRY(LoadIndex(paths.idx()));
  if (!index.encrypted()) {
    return RekeyOutcome::kUnencrypted;
  }
  IndexInfo& info = index.mutable_info();
  if (info.key_id == new_key.id()) {
    return RekeyOutcome::kAlready;
  }
  if (info.key_id != old_key.id()) {
    return Error(ErrorCode::kPermission, paths.base + " is encrypted under master key id "
                                             + KeyIdHex(info.key_id) + ", not the old key's "
                                             + KeyIdHex(old_key.id()));
  }
  KeyBytes data_key = FERRY_TRY(old_key.Unwrap(info.wrapped_key));
  info.wrapped_key = new_key.Wrap(data_key);
  WipeKey(data_key);
  info.key_id = new_key.id();
  info.generation += 1;
  std::vector<uint8_t> scratch;
  FERRY_TRY(PublishIndex(paths, index, /*sync=*/true, scratch));
  return RekeyOutcome::kRewrapped;
}

}  // namespace ferry::cache
