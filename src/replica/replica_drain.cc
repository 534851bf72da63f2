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
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
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
unsigned BuildThreads() {
  return std::max(2u, std::min(4u, std::thread::hardware_concurrency()));
}

// Builds one file a pass asked for. A file the pass moved past and reads on is re-encoded at
// once when the machine has the room (the pass goes on for a while), else relocated at the low
// priority (become_low). A file the pass closed is relocated first, at the caller's priority:
// its pass may be ending (an analysis closes its files at its end), and a re-encoding chosen
// because that pass left cores idle — an LZMA-9 file's takes the better part of a second —
// would make its user wait for it; nor on the low thread: the closing process holds the file's
// open lock a moment longer, and a loaded machine may not run that thread.
void BuildOne(const cache::Config& config,
              const std::string& key,
              const ReplicaBuildOptions& given) {
  ReplicaBuildOptions options = given;
  const bool still_open = RequestedStillOpen(config, key);
  if (!still_open) {
    options.stage = ReplicaStage::kRelocate;
    options.become_low = nullptr;
  }
  // The request goes first: one that arrives during the build asks for another pass.
  Unlink(QueueDir(config), key);
  auto report = BuildReplica(config, key, options);
  if (report && report->reason == kPreemptedReason) {
    // Re-encoding it had to wait: asked again (as it was), to be relocated after the others.
    auto request = cache::OpenCacheFile(QueueDir(config) + "/" + key, O_WRONLY);
    if (request && still_open) {
      (void)::pwrite(request->get(), kStillOpen.data(), kStillOpen.size(), 0);
    }
  } else if (report && report->stage == 1) {
    RequestReencode(config, key);
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
  Reencoder(const cache::Config& config, ReplicaBuildOptions options)
      : config_(config), options_(std::move(options)) {
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
  // Takes `key` out of the thread's way (false: it re-encodes that file now; its request
  // waits until the re-encoding stops). Until Release.
  bool Claim(const std::string& key) FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (key == busy_) {
      return false;
    }
    claimed_.push_back(key);
    return true;
  }
  void Release(const std::string& key) FERRY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    std::erase(claimed_, key);
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

// Wakes the drainer when a request lands in the queue directory or a relocation ends
// (Notify), or after `timeout` at most (without inotify, after the timeout or a Notify).
class QueueWatch {
 public:
  explicit QueueWatch(const std::string& dir)
      : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)),
        done_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_.get() >= 0) {
      (void)::inotify_add_watch(fd_.get(), dir.c_str(), IN_CREATE | IN_MOVED_TO);
    }
  }
  void Notify() {
    const uint64_t one = 1;
    (void)!::write(done_.get(), &one, sizeof one);
  }
  void Wait(std::chrono::milliseconds timeout) {
    std::array<pollfd, 2> p = {pollfd{.fd = fd_.get(), .events = POLLIN, .revents = 0},
                               pollfd{.fd = done_.get(), .events = POLLIN, .revents = 0}};
    (void)::poll(p.data(), p.size(), static_cast<int>(timeout.count()));  // fd -1: ignored
    alignas(inotify_event) std::array<char, 4096> events;
    while (fd_.get() >= 0 && ::read(fd_.get(), events.data(), events.size()) > 0) {
    }
    uint64_t count = 0;
    (void)!::read(done_.get(), &count, sizeof count);
  }

 private:
  Fd fd_;
  Fd done_;
};

// The relocations of the files passes asked for: each on a thread of its own, up to
// BuildThreads at once, started as soon as its request lands and a thread is free — not when
// the files asked for before it are all done (the closes at a pass's end land one by one).
// Not the file the re-encoding holds, nor one relocated now: its request waits for that build.
class Relocations {
 public:
  Relocations(const cache::Config& config,
              ReplicaBuildOptions base,
              Reencoder& reencoder,
              QueueWatch& watch)
      : config_(config), options_(std::move(base)), reencoder_(reencoder), watch_(watch) {
    options_.stage = ReplicaStage::kAuto;
    options_.relocate_first = true;  // its re-encoding is queued (BuildOne)
    options_.preempt = [&config] {
      return !QueuedKeys(config).empty();
    };
  }
  Relocations(const Relocations&) = delete;
  Relocations& operator=(const Relocations&) = delete;
  ~Relocations() {
    for (Running& r : running_) {
      r.thread.join();
    }
  }

  // Starts the queued files it can; the number started.
  int Start() {
    Reap();
    int started = 0;
    for (const std::string& key : QueuedKeys(config_)) {
      if (running_.size() >= BuildThreads()) {
        break;
      }
      const bool taken = std::any_of(running_.begin(), running_.end(),
                                     [&key](const Running& r) { return r.key == key; });
      if (taken || !reencoder_.Claim(key)) {
        continue;
      }
      Running& r = running_.emplace_back();
      r.key = key;
      // Each its own copy of the options: the caller's hooks may keep state (the pause's next
      // look); what they share (the CPU measure) is thread-safe.
      r.thread = std::thread([this, key, done = r.done, options = options_] {
        BuildOne(config_, key, options);
        reencoder_.Release(key);
        done->store(true);
        watch_.Notify();
      });
      ++started;
    }
    return started;
  }
  // Whether a relocation runs (after joining those that ended).
  bool busy() {
    Reap();
    return !running_.empty();
  }

 private:
  struct Running {
    std::string key;
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
    std::thread thread;
  };
  void Reap() {
    std::erase_if(running_, [](Running& r) {
      if (!r.done->load()) {
        return false;
      }
      r.thread.join();
      return true;
    });
  }

  const cache::Config& config_;
  ReplicaBuildOptions options_;
  Reencoder& reencoder_;
  QueueWatch& watch_;
  std::vector<Running> running_;  // the caller's thread's
};

// One drainer's work while it holds the queue lock: relocations first, each as soon as it is
// asked for, re-encodings on their own thread meanwhile.
void Drain(const cache::Config& config, const ReplicaBuildOptions& options) {
  // The threads are looked at every so often; a request or a relocation's end wakes the
  // caller at once.
  constexpr std::chrono::milliseconds kLook{50};
  QueueWatch watch(QueueDir(config));  // before the first look: no request lands unseen
  Reencoder reencoder(config, options);
  Relocations relocations(config, options, reencoder, watch);
  for (int round = 0; round < 1000;) {
    round += relocations.Start();
    if (relocations.busy() || reencoder.running()) {
      watch.Wait(kLook);
      continue;
    }
    reencoder.Join();
    if (!QueuedKeys(config).empty()) {
      continue;  // asked for during the last relocation, or the file the re-encoding held
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
