#include "replica/replica_drain.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "cache/dir_access.h"
#include "cache/lock_file.h"
#include "cache/replica_queue.h"

namespace ferry::replica {

Status DrainReplicaQueue(const cache::Config& config, const ReplicaBuildOptions& options) {
  const std::string qdir = cache::QueueDir(config);
  FERRY_TRY(cache::MakeCacheSubdir(qdir));
  cache::LockFile lock = FERRY_TRY(cache::LockFile::Open(qdir + "/.lock"));
  for (int round = 0; round < 1000; ++round) {
    if (!lock.Lock(0, /*exclusive=*/true, 0)) {
      return OkStatus();  // another drainer has it
    }
    for (int pass = 0; pass < 1000; ++pass) {
      std::vector<std::string> keys = cache::QueuedKeys(config);
      if (keys.empty()) {
        break;
      }
      for (const std::string& key : keys) {
        // The request goes first: one that arrives during the build asks for another pass.
        std::string request = qdir;
        request += '/';
        request += key;
        ::unlink(request.c_str());
        (void)BuildReplica(config, key, options);
      }
    }
    (void)lock.Unlock(0);
    if (cache::QueuedKeys(config).empty()) {
      return OkStatus();
    }
  }
  return OkStatus();
}

}  // namespace ferry::replica
