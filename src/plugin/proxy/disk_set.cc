#include "plugin/proxy/disk_set.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/fd.h"
#include "base/log.h"
#include "cache/dir_access.h"
#include "cache/entry_store.h"
#include "cache/url.h"
#include "readahead/prefetcher.h"

namespace ferry::proxy {
namespace {

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Statvfs of `dir`; zeros when it cannot be asked.
DiskSpace SpaceOf(const std::string& dir) {
  struct statvfs v = {};
  if (::statvfs(dir.c_str(), &v) != 0) {
    return {};
  }
  DiskSpace s;
  s.size_bytes = static_cast<uint64_t>(v.f_blocks) * v.f_frsize;
  s.free_bytes = static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
  // A file system that does not count inodes (f_files 0) never runs out of them.
  s.free_inodes = v.f_files == 0 ? UINT64_MAX : static_cast<uint64_t>(v.f_favail);
  return s;
}

// Writes, syncs and removes a small file in `dir`: the disk takes writes again.
Status ProbeWrite(const std::string& dir) {
  const std::string path = dir + "/.disk-probe";
  Fd fd = FERRY_TRY(cache::OpenCacheFile(path, O_WRONLY | O_TRUNC));
  char block[4096];
  std::memset(block, 0x5a, sizeof block);
  Status st = PwriteFull(fd.get(), block, sizeof block, 0);
  if (st && ::fsync(fd.get()) != 0) {
    st = IoError("fsync " + path, errno);
  }
  (void)fd.Close();
  (void)::unlink(path.c_str());
  return st;
}

}  // namespace

std::string UnexplainedNoSpace(const DiskSpace& s,
                               uint64_t min_free_bytes,
                               uint64_t min_free_inodes) {
  if (s.size_bytes == 0 || s.free_bytes < s.size_bytes / 10 || s.free_bytes < 2 * min_free_bytes
      || s.free_inodes <= std::max<uint64_t>(min_free_inodes, 64)) {
    return "";  // a full file system (bytes or inodes): eviction's business
  }
  return "writes fail with ENOSPC while its file system has " + std::to_string(s.free_bytes >> 20)
         + " MiB and " + std::to_string(s.free_inodes)
         + " inodes free: the device under it is out of space (a thin or loop device?)";
}

const char* DiskErrnoName(int err) {
  switch (err) {
    case EIO:
      return "I/O error (EIO)";
    case EROFS:
      return "read-only file system (EROFS)";
    case ENXIO:
      return "no such device (ENXIO)";
    case ENODEV:
      return "no such device (ENODEV)";
    case ENOTCONN:
      return "not connected (ENOTCONN)";
    case ESTALE:
      return "stale file handle (ESTALE)";
    default:
      return nullptr;
  }
}

std::string DiskHealth(const std::string& dir) {
  const std::string marker = dir + "/" + cache::kMarkerName;
  struct stat st = {};
  if (::stat(marker.c_str(), &st) != 0) {
    return marker + " is gone (" + ErrnoText(errno) + "): disk removed or unmounted?";
  }
  struct statvfs v = {};
  if (::statvfs(dir.c_str(), &v) != 0) {
    return "statvfs " + dir + ": " + ErrnoText(errno);
  }
  if ((v.f_flag & ST_RDONLY) != 0) {
    return "the file system of " + dir + " is read-only";
  }
  return "";
}

DiskSet::DiskSet(const cache::Config& base, const DiskOptions& options)
    : base_(base), options_(options) {
  // One read-ahead engine for every disk: its byte budget is the process's, and the branches a
  // client read seed its next files whichever disk they land on.
  prefetcher_ = std::make_shared<readahead::Prefetcher>(
      base.readahead_max_bytes, base.readahead_fetches, base.readahead_fetches_app_waits);
}

DiskSet::~DiskSet() {
  Shutdown();
}

Result<std::unique_ptr<DiskSet>> DiskSet::Create(const cache::Config& base,
                                                 const std::vector<std::string>& dirs,
                                                 const DiskOptions& options) {
  if (dirs.empty()) {
    return InvalidArgumentError("no cache directory");
  }
  std::unique_ptr<DiskSet> set(new DiskSet(base, options));
  for (const std::string& dir : dirs) {
    FERRY_TRY_CTX(set->AddDisk(dir), dir);
  }
  return set;
}

Status DiskSet::AddDisk(const std::string& dir) {
  auto d = std::make_unique<Disk>();
  d->dir = dir;
  cache::Config c = base_;
  c.dir = dir;
  c.prefetcher = prefetcher_;
  const size_t index = disks_.size();
  c.on_fault = [this, index](const Error& why) {
    OnFault(index, why);
  };
  // The water marks are shares of this disk's own file system.
  const DiskSpace space = SpaceOf(dir);
  if (options_.high_percent != 0 && space.size_bytes != 0) {
    c.min_free_bytes =
        std::max(c.min_free_bytes, space.size_bytes / 100 * (100 - options_.high_percent));
  }
  if (options_.low_percent != 0 && space.size_bytes != 0) {
    c.evict_to_free_bytes = space.size_bytes / 100 * (100 - options_.low_percent);
  }
  d->min_free_bytes = c.min_free_bytes;
  d->config = std::move(c);
  Disk& disk = *d;
  disks_.push_back(std::move(d));
  Status made = MakeCache(disk);
  if (!made && index == 0) {
    return made;  // the home: status file and access log need it
  }
  if (!made) {
    TakeOut(disk, "cannot use it at the start: " + made.error().ToString());
  }
  return OkStatus();
}

Status DiskSet::MakeCache(Disk& d) {
  MutexLock lock(d.mu);
  if (d.owner) {
    return OkStatus();
  }
  // Only the home is created when missing: another disk's directory that is not there may be
  // on a disk not mounted, and would be made on the file system under its mount point.
  struct stat st = {};
  if (&d != disks_.front().get() && ::stat(d.dir.c_str(), &st) != 0) {
    return NotFoundError(d.dir + " does not exist (a disk not mounted?); not created");
  }
  d.owner = FERRY_TRY(cache::Cache::Create(d.config));
  d.cache.store(d.owner.get(), std::memory_order_release);
  return OkStatus();
}

void DiskSet::OnFault(size_t disk, const Error& why) {
  Disk& d = *disks_[disk];
  std::string reason;
  if (const char* name = DiskErrnoName(why.sys_errno())) {
    reason = name;
    reason += ": " + why.ToString();
  } else if (why.sys_errno() == ENOSPC) {
    reason = UnexplainedNoSpace(SpaceOf(d.dir), d.min_free_bytes, base_.min_free_inodes);
    if (reason.empty()) {
      return;
    }
  } else {
    // ENOENT of a removed entry, a corrupt index, a lock timeout: faults of one entry, unless
    // the disk under it is gone or read-only.
    reason = DiskHealth(d.dir);
    if (reason.empty()) {
      return;
    }
  }
  d.faults.fetch_add(1, std::memory_order_relaxed);
  TakeOut(d, reason);
}

int64_t DiskSet::RetryIntervalMs(const Disk& d) const {
  return (int64_t{options_.retry_s} * 1000) << d.backoff;
}

void DiskSet::TakeOut(Disk& d, const std::string& why) {
  if (!d.up.exchange(false)) {
    return;
  }
  int64_t interval_ms = 0;
  {
    MutexLock lock(d.mu);
    const int64_t now = SteadyNowMs();
    // A disk that fails again soon after it came back (a thin device whose probe write found
    // a free block, a flaky cable) is probed half as often each time, down to every 64
    // intervals; ten quiet intervals in service forgive it.
    const bool soon = d.up_since_ms != 0 && now - d.up_since_ms < 10 * RetryIntervalMs(d);
    d.backoff = soon ? std::min(d.backoff + 1, kMaxBackoff) : 0;
    interval_ms = RetryIntervalMs(d);
    d.reason = why;
    d.down_since_unix = WallNow();
    d.retry_at_ms = now + interval_ms;
  }
  d.outages.fetch_add(1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_relaxed);
  FERRY_WARN("proxy",
             "cache disk %s out of service: %s; its files are read from the origin and new "
             "entries go to the %zu other disk(s) in service (retried every %lld s)",
             d.dir.c_str(), why.c_str(), up(), static_cast<long long>(interval_ms / 1000));
}

void DiskSet::Retry(Disk& d, int64_t now_ms) {
  {
    MutexLock lock(d.mu);
    if (now_ms < d.retry_at_ms) {
      return;
    }
    d.retry_at_ms = now_ms + RetryIntervalMs(d);
  }
  std::string why = DiskHealth(d.dir);
  if (why.empty()) {
    if (Status st = ProbeWrite(d.dir); !st) {
      why = "probe write: " + st.error().ToString();
    } else if (Status made = MakeCache(d); !made) {
      why = "cannot use it: " + made.error().ToString();
    }
  }
  if (!why.empty()) {
    MutexLock lock(d.mu);
    d.reason = why;  // still out: said once when it went, not at every probe
    return;
  }
  {
    MutexLock lock(d.mu);
    d.reason.clear();
    d.down_since_unix = 0;
    d.up_since_ms = now_ms;
  }
  d.up.store(true);
  generation_.fetch_add(1, std::memory_order_relaxed);
  FERRY_WARN("proxy", "cache disk %s back in service", d.dir.c_str());
}

void DiskSet::Check() {
  const int64_t now_ms = SteadyNowMs();
  for (const std::unique_ptr<Disk>& d : disks_) {
    if (d->up.load()) {
      if (std::string why = DiskHealth(d->dir); !why.empty()) {
        d->faults.fetch_add(1, std::memory_order_relaxed);
        TakeOut(*d, why);
      }
    } else {
      Retry(*d, now_ms);
    }
  }
}

int DiskSet::Find(const std::string& key) const {
  for (size_t i = 0; i < disks_.size(); ++i) {
    if (disks_[i]->up.load() && disks_[i]->cache.load(std::memory_order_acquire)->Holds(key)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int DiskSet::Place() const {
  int best = -1;
  bool best_roomy = false;
  double best_score = -1;
  for (size_t i = 0; i < disks_.size(); ++i) {
    const Disk& d = *disks_[i];
    if (!d.up.load()) {
      continue;
    }
    const DiskSpace s = SpaceOf(d.dir);
    const bool roomy = d.cache.load(std::memory_order_acquire)->accepting()
                       && s.free_bytes > d.min_free_bytes && s.free_inodes > base_.min_free_inodes;
    const double score = static_cast<double>(s.free_bytes)
                         / static_cast<double>(1 + std::max<int64_t>(0, d.open.load()));
    if (best < 0 || (roomy && !best_roomy) || (roomy == best_roomy && score > best_score)) {
      best = static_cast<int>(i);
      best_roomy = roomy;
      best_score = score;
    }
  }
  return best;
}

Result<DiskSet::Opened> DiskSet::Open(const std::string& url,
                                      std::shared_ptr<cache::Origin> origin,
                                      const cache::OpenOptions& options) {
  auto normalized = cache::NormalizeUrl(url, base_.url_params);
  const std::string key = normalized ? cache::EntryKey(*normalized) : std::string();
  // Twice at most: a disk that fails during the open (its fault hook took it out) leaves a
  // pass-through handle, and the entry gets another disk.
  for (int attempt = 0; attempt < 2; ++attempt) {
    int disk = key.empty() ? -1 : Find(key);
    const bool known = disk >= 0;
    if (!known) {
      disk = Place();
    }
    if (disk < 0) {
      break;
    }
    Disk& d = *disks_[static_cast<size_t>(disk)];
    auto file = FERRY_TRY(d.cache.load(std::memory_order_acquire)->Open(url, origin, options));
    if (file->pass_through() && !d.up.load() && attempt == 0) {
      continue;  // the handle is dropped unread; the origin handle stays the caller's
    }
    if (!known && !file->pass_through()) {
      d.placed.fetch_add(1, std::memory_order_relaxed);
    }
    d.open.fetch_add(1, std::memory_order_relaxed);
    return Opened{std::move(file), disk};
  }
  // No disk in service: the origin's bytes, nothing cached.
  cache::OpenOptions uncached = options;
  uncached.uncached = true;
  cache::Cache* home = disks_.front()->cache.load(std::memory_order_acquire);
  return Opened{FERRY_TRY(home->Open(url, std::move(origin), uncached)), -1};
}

void DiskSet::Closed(int disk) {
  if (disk >= 0 && static_cast<size_t>(disk) < disks_.size()) {
    disks_[static_cast<size_t>(disk)]->open.fetch_sub(1, std::memory_order_relaxed);
  }
}

std::vector<std::string> DiskSet::DirsInService() const {
  std::vector<std::string> dirs;
  for (const std::unique_ptr<Disk>& d : disks_) {
    if (d->up.load()) {
      dirs.push_back(d->dir);
    }
  }
  return dirs;
}

size_t DiskSet::up() const {
  return static_cast<size_t>(
      std::count_if(disks_.begin(), disks_.end(), [](const auto& d) { return d->up.load(); }));
}

std::vector<DiskInfo> DiskSet::Snapshot() const {
  std::vector<DiskInfo> out;
  for (const std::unique_ptr<Disk>& d : disks_) {
    DiskInfo i;
    i.dir = d->dir;
    i.up = d->up.load();
    i.faults = d->faults.load();
    i.outages = d->outages.load();
    i.open = d->open.load();
    i.placed = d->placed.load();
    // A disk out of service is not asked: statvfs of a dead device may hang.
    if (i.up) {
      const DiskSpace s = SpaceOf(d->dir);
      i.free_bytes = s.free_bytes;
      i.free_inodes = s.free_inodes == UINT64_MAX ? 0 : s.free_inodes;
    }
    cache::Cache* c = d->cache.load(std::memory_order_acquire);
    i.writeback_queued_bytes = c != nullptr ? c->writer().queued_bytes() : 0;
    {
      MutexLock lock(d->mu);
      i.reason = d->reason;
      i.down_since_unix = d->down_since_unix;
    }
    out.push_back(std::move(i));
  }
  return out;
}

bool DiskSet::WritebackIdle() const {
  return std::all_of(disks_.begin(), disks_.end(), [](const auto& d) {
    cache::Cache* c = d->cache.load(std::memory_order_acquire);
    return c == nullptr || c->writer().idle();
  });
}

uint64_t DiskSet::WritebackQueuedBytes() const {
  uint64_t n = 0;
  for (const std::unique_ptr<Disk>& d : disks_) {
    if (cache::Cache* c = d->cache.load(std::memory_order_acquire)) {
      n += c->writer().queued_bytes();
    }
  }
  return n;
}

const readahead::Prefetcher* DiskSet::prefetcher() const {
  for (const std::unique_ptr<Disk>& d : disks_) {
    const cache::Cache* c = d->cache.load(std::memory_order_acquire);
    if (const readahead::Prefetcher* p = c != nullptr ? c->prefetcher() : nullptr) {
      return p;
    }
  }
  return nullptr;
}

void DiskSet::Shutdown() {
  for (const std::unique_ptr<Disk>& d : disks_) {
    if (cache::Cache* c = d->cache.load(std::memory_order_acquire)) {
      c->Shutdown();
    }
  }
}

}  // namespace ferry::proxy
