// The drainer runs the replica's two stages (replica_build.h, ReplicaStage). A file a pass has
// left is built at once, without waiting for the pass: re-encoded when the machine has the
// CPU for it now (the caller's measure), else relocated as stored — a copy the pass does not
// notice, published before it is durable and releasing nothing (relocate_first) — and queued
// for re-encoding. Re-encodings run when nothing else is queued, wait in
// the caller's pause while a pass needs the cores, and give way to a file the pass leaves
// meanwhile: a relocation must be ready when the pass ends, a re-encoding only before the next.
// The queued files are built a few at a time, on threads of their own (BuildThreads); the
// re-encodings one after another, since each takes the cores a machine leaves.
#include "replica/replica_drain.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
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

// The files relocated at once: each build is one file's (its entry, build lock, manifest and
// status), and a relocation is mostly one thread's copy and fsync, so the files a pass leaves
// at its end (an analysis closes them all then) are ready in the time of the longest, not of
// their sum. Two at least, since a relocation also waits on the disk.
unsigned BuildThreads(size_t queued) {
  const unsigned cores = std::max(2u, std::min(4u, std::thread::hardware_concurrency()));
  return static_cast<unsigned>(std::min<size_t>(queued, cores));
}

// Builds one file a pass asked for.
void BuildOne(const cache::Config& config,
              const std::string& key,
              const ReplicaBuildOptions& options) {
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

// Builds the files passes asked for, BuildThreads at a time; false when none was queued.
bool BuildRequested(const cache::Config& config, const ReplicaBuildOptions& base) {
  const std::vector<std::string> keys = QueuedKeys(config);
  ReplicaBuildOptions options = base;
  options.stage = ReplicaStage::kAuto;
  options.relocate_first = true;  // its re-encoding is queued below
  options.preempt = [&config] {
    return !QueuedKeys(config).empty();
  };
  const unsigned threads = BuildThreads(keys.size());
  if (threads <= 1) {
    for (const std::string& key : keys) {
      BuildOne(config, key, options);
    }
    return !keys.empty();
  }
  std::atomic<size_t> next{0};
  auto work = [&config, &keys, &next](const ReplicaBuildOptions& own) {
    for (size_t k = next.fetch_add(1); k < keys.size(); k = next.fetch_add(1)) {
      BuildOne(config, keys[k], own);
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) {
    // Each its own copy of the options: the caller's hooks may keep state (the pause's next
    // look); what they share (the CPU measure) is thread-safe.
    workers.emplace_back(work, options);
  }
  work(options);
  for (std::thread& w : workers) {
    w.join();
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
