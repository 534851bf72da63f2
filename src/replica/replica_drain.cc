// The drainer runs the replica's two stages (replica_build.h, ReplicaStage). A file a pass has
// left is built at once, without waiting for the pass: re-encoded when the machine has the
// CPU for it now (the caller's measure), else relocated as stored — a copy the pass does not
// notice, published before it is durable and releasing nothing (relocate_first) — and queued
// for re-encoding. Re-encodings run when nothing else is queued, wait in
// the caller's pause while a pass needs the cores, and give way to a file the pass leaves
// meanwhile: a relocation must be ready when the pass ends, a re-encoding only before the next.
#include "replica/replica_drain.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cache/dir_access.h"
#include "cache/lock_file.h"
#include "replica/replica_queue.h"

namespace ferry::replica {
namespace {

void Unlink(const std::string& dir, const std::string& key) {
  const std::string path = dir + "/" + key;
  ::unlink(path.c_str());
}

// Builds the files passes asked for; false when none was queued.
bool BuildRequested(const cache::Config& config, const ReplicaBuildOptions& base) {
  const std::vector<std::string> keys = QueuedKeys(config);
  ReplicaBuildOptions options = base;
  options.stage = ReplicaStage::kAuto;
  options.relocate_first = true;  // its re-encoding is queued below
  options.preempt = [&config] {
    return !QueuedKeys(config).empty();
  };
  for (const std::string& key : keys) {
    // The request goes first: one that arrives during the build asks for another pass.
    Unlink(QueueDir(config), key);
    auto report = BuildReplica(config, key, options);
    if (report && report->reason == kPreemptedReason) {
      // Re-encoding it had to wait: asked again, to be relocated after the others.
      (void)cache::OpenCacheFile(QueueDir(config) + "/" + key, O_WRONLY);
    } else if (report && report->stage == 1) {
      RequestReencode(config, key);
    }
  }
  return !keys.empty();
}

// Re-encodes the files relocated earlier; false when none was queued, or when one gave way to
// a file a pass left (its request stays).
bool Reencode(const cache::Config& config, const ReplicaBuildOptions& base) {
  const std::vector<std::string> keys = QueuedReencodes(config);
  ReplicaBuildOptions options = base;
  options.stage = ReplicaStage::kReencode;
  options.preempt = [&config] {
    return !QueuedKeys(config).empty();
  };
  for (const std::string& key : keys) {
    auto report = BuildReplica(config, key, options);
    if (report && report->reason == kPreemptedReason) {
      return false;
    }
    // Done, gone, or taken over by an explicit build (which re-encodes).
    Unlink(ReencodeQueueDir(config), key);
  }
  return !keys.empty();
}

}  // namespace

Status DrainReplicaQueue(const cache::Config& config, const ReplicaBuildOptions& options) {
  const std::string qdir = QueueDir(config);
  FERRY_TRY(cache::MakeCacheSubdir(qdir));
  cache::LockFile lock = FERRY_TRY(cache::LockFile::Open(qdir + "/.lock"));
  for (int round = 0; round < 1000; ++round) {
    if (!lock.Lock(0, /*exclusive=*/true, 0)) {
      return OkStatus();  // another drainer has it
    }
    for (int pass = 0; pass < 1000; ++pass) {
      if (!BuildRequested(config, options) && !Reencode(config, options)
          && QueuedKeys(config).empty()) {
        break;
      }
    }
    (void)lock.Unlock(0);
    if (QueuedKeys(config).empty() && QueuedReencodes(config).empty()) {
      return OkStatus();
    }
  }
  return OkStatus();
}

}  // namespace ferry::replica
