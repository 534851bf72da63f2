// The drainer runs the replica's two stages (replica_build.h, ReplicaStage). A file a pass has
// left is built at once, without waiting for the pass: re-encoded when the machine has the
// CPU for it now (the caller's measure), else relocated as stored — a copy the pass does not
// notice, published before it is durable and releasing nothing (relocate_first) — and queued
// for re-encoding. Re-encodings run when nothing else is queued, wait in
// the caller's pause while a pass needs the cores, and give way to a file the pass leaves
// meanwhile: a relocation must be ready when the pass ends, a re-encoding only before the next.
// The queued files are built a few at a time, on threads of their own (BuildThreads); the
// re-encodings one after another, since each takes the cores a machine leaves, on a thread of
// their own (Reencoder): a file a pass leaves is relocated as soon as its request lands (the
// queue is watched with inotify), not when the re-encoding reaches its next pause — that
// pause comes from an idle-class thread, which a loaded machine may not run for a long time.
#include "replica/replica_drain.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
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

// Builds the files passes asked for (`keys`), BuildThreads at a time.
void BuildRequested(const cache::Config& config,
                    const ReplicaBuildOptions& base,
                    const std::vector<std::string>& keys) {
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
    return;
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
}

// The re-encodings of the files relocated earlier, one round at a time (every file queued for
// it, one after another), on a thread of their own beside the relocations. A relocation and
// the re-encoding never take the same file: the caller claims the files it relocates
// (Claim), the thread skips those and the one it re-encodes is left out of the claim. A
// round stops when its build gives way (ReplicaBuildOptions::preempt) to a file a pass left or
// to relocations running: they go first, and the re-encoding is asked for again after.
class Reencoder {
 public:
  Reencoder(const cache::Config& config, const ReplicaBuildOptions& options)
      : config_(config), options_(options) {
    options_.stage = ReplicaStage::kReencode;
    options_.preempt = [this] {
      return relocating() || !QueuedKeys(config_).empty();
    };
  }
  Reencoder(const Reencoder&) = delete;
  Reencoder& operator=(const Reencoder&) = delete;
  ~Reencoder() { Join(); }

  void Start() FERRY_EXCLUDES(mu_) {
    Join();
    {
      MutexLock lock(mu_);
      running_ = true;
    }
    thread_ = std::thread([this] { Round(); });
  }
  void Join() {
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  bool running() const FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return running_;
  }
  // Takes `keys` out of the thread's way, but for the file it re-encodes now, whose request
  // waits until the re-encoding stops (dropped from `keys`). Until Release.
  void Claim(std::vector<std::string>& keys) FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    std::erase(keys, busy_);
    claimed_ = keys;
  }
  void Release() FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    claimed_.clear();
  }

 private:
  bool relocating() const FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return !claimed_.empty();
  }
  // Whether the round may re-encode `key` now (not claimed); then it is busy_.
  bool Take(const std::string& key) FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (std::find(claimed_.begin(), claimed_.end(), key) != claimed_.end()) {
      return false;
    }
    busy_ = key;
    return true;
  }
  void Round() FERRY_EXCLUDES(mu_) {
    for (const std::string& key : QueuedReencodes(config_)) {
      if (!Take(key)) {
        break;  // relocated now, and queued again after that
      }
      auto report = BuildReplica(config_, key, options_);
      if (report && report->reason == kPreemptedReason) {
        break;
      }
      // Done, gone, or taken over by an explicit build (which re-encodes).
      Unlink(ReencodeQueueDir(config_), key);
    }
    MutexLock lock(mu_);
    busy_.clear();
    running_ = false;
  }

  const cache::Config& config_;
  ReplicaBuildOptions options_;  // its own copy: the hooks may keep state
  mutable Mutex mu_;
  bool running_ FERRY_GUARDED_BY(mu_) = false;
  std::string busy_ FERRY_GUARDED_BY(mu_);                  // the file re-encoded now
  std::vector<std::string> claimed_ FERRY_GUARDED_BY(mu_);  // the files relocated now
  std::thread thread_;
};

// Wakes the drainer when a request lands in the queue directory (or after `timeout` at most;
// without inotify, after the timeout alone).
class QueueWatch {
 public:
  explicit QueueWatch(const std::string& dir) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_.get() >= 0) {
      (void)::inotify_add_watch(fd_.get(), dir.c_str(), IN_CREATE | IN_MOVED_TO);
    }
  }
  void Wait(std::chrono::milliseconds timeout) {
    pollfd p = {.fd = fd_.get(), .events = POLLIN, .revents = 0};
    (void)::poll(&p, fd_.get() >= 0 ? 1 : 0, static_cast<int>(timeout.count()));
    alignas(inotify_event) std::array<char, 4096> events;
    while (fd_.get() >= 0 && ::read(fd_.get(), events.data(), events.size()) > 0) {
    }
  }

 private:
  Fd fd_;
};

// One drainer's work while it holds the queue lock: relocations first, each as soon as it is
// asked for, re-encodings on their own thread meanwhile.
void Drain(const cache::Config& config, const ReplicaBuildOptions& options) {
  // The re-encoding thread is looked at every so often while it runs; a request wakes the
  // caller at once.
  constexpr std::chrono::milliseconds kLook{50};
  QueueWatch watch(QueueDir(config));  // before the first look: no request lands unseen
  Reencoder reencoder(config, options);
  for (int round = 0; round < 1000;) {
    std::vector<std::string> keys = QueuedKeys(config);
    reencoder.Claim(keys);
    if (!keys.empty()) {
      BuildRequested(config, options, keys);
      reencoder.Release();
      ++round;
      continue;
    }
    reencoder.Release();
    if (reencoder.running()) {
      watch.Wait(kLook);
      continue;
    }
    reencoder.Join();
    if (!QueuedKeys(config).empty()) {
      continue;  // the file the re-encoding held
    }
    if (QueuedReencodes(config).empty()) {
      return;
    }
    reencoder.Start();
    ++round;
  }
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
    Drain(config, options);
    (void)lock.Unlock(0);
    if (QueuedKeys(config).empty() && QueuedReencodes(config).empty()) {
      return OkStatus();
    }
  }
  return OkStatus();
}

}  // namespace ferry::replica
