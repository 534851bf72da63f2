#include "cache/cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "base/log.h"
#include "base/strings.h"
#include "cache/access_confirm.h"
#include "cache/capacity.h"
#include "cache/dir_access.h"
#include "cache/entry_store.h"
#include "cache/page_seal.h"
#include "cache/replica_hooks.h"
#include "cache/url.h"
#include "readahead/bulk_detect.h"
#include "readahead/file_ahead.h"
#include "readahead/prefetcher.h"

namespace ferry::cache {
namespace {

// Capacity is re-measured at most this often for admissions, and after this many bytes written.
constexpr int64_t kCheckIntervalNs = 2'000'000'000;
// ... and, while known to be over the cap, not more often than this.
constexpr int64_t kMinCheckGapNs = 100'000'000;
constexpr uint64_t kCheckEveryBytes = 64ull << 20;
// Inodes a new entry is assumed to take until the next scan counts them: index, data,
// fragments, lock, access trace, and its subdirectory when it is the first there.
constexpr uint64_t kInodesPerEntry = 6;
constexpr int64_t kMergeIntervalNs = 5'000'000'000;

// "root://host:port/path" -> "host:port": the link a read-ahead window is sized for.
std::string HostOf(const std::string& normalized_url) {
  const size_t sep = normalized_url.find("://");
  const size_t begin = sep == std::string::npos ? 0 : sep + 3;
  const size_t end = normalized_url.find('/', begin);
  return normalized_url.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The URL's path (before any "?") ends in `suffix`, case-insensitively.
bool PathEndsWith(const std::string& url, std::string_view suffix) {
  return EndsWithNoCase(std::string_view(url).substr(0, url.find('?')), suffix);
}

}  // namespace

Result<std::shared_ptr<Cache>> Cache::Create(const Config& config) {
  // Checked before anything is written: a directory this user may not use (another's, or one
  // others can read) gets no file from us, and the caller reads through (fail-open).
  FERRY_TRY(CheckCacheDir(config.dir, config.shared));
  const Sharing sharing = config.shared.empty() ? Sharing::kPrivate : Sharing::kGroup;
  const gid_t gid = sharing == Sharing::kGroup ? FERRY_TRY(GroupId(config.shared)) : 0;
  Config effective = config;
  if (!config.key_file.empty() && !config.master_key) {
    // A key that cannot be used stops the cache, not the reads: the caller reads through.
    effective.master_key =
        std::make_shared<const MasterKey>(FERRY_TRY(MasterKey::Load(config.key_file)));
  }
  if (!effective.replica_hooks) {
    // Without a replica tier there is none to serve or ask for. (An encrypted cache keeps
    // sealed replicas: docs/format/replica.md, "Sealed replicas".)
    effective.replica = ReplicaMode::kOff;
  }
  FERRY_TRY(PrepareCacheDir(config.dir, sharing, gid));
  (void)EnsureStatsFile(config.dir);
  return std::shared_ptr<Cache>(new Cache(effective));
}

Result<std::shared_ptr<Cache>> Cache::Get(const Config& config) {
  static Mutex mu;
  // Never destroyed, so a Get() during static destruction (plug-in unload) finds a live map.
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): the leak is the point
  static auto* caches = new std::map<std::string, std::weak_ptr<Cache>>();
  MutexLock lock(mu);
  std::weak_ptr<Cache>& slot = (*caches)[config.dir];
  if (auto existing = slot.lock()) {
    return existing;
  }
  std::shared_ptr<Cache> created = FERRY_TRY(Create(config));
  slot = created;
  return created;
}

Cache::Cache(const Config& config) : config_(config), planner_(config.planner()) {
  if (!config_.shared.empty()) {
    confirmations_ = std::make_unique<AccessConfirmations>(config_.dir, config_.shared_reauth_s);
  }
  writer_ = std::make_unique<WriteBehind>(
      config_, counters_, [this](uint64_t bytes) { OnWritten(bytes); },
      [this](const std::shared_ptr<Entry>& entry) { OnIdle(entry); });
}

void Cache::OnIdle(const std::shared_ptr<Entry>& entry) {
  // A pass over a ROOT file ended, or moved past it, with new bytes in the cache: its replica
  // can take them.
  if (config_.replica == ReplicaMode::kAuto && entry->TakeReplicaWish() && entry->LooksLikeRoot()) {
    config_.replica_hooks->RequestBuild(config_, entry->key(), entry->handles() > 0);
  }
}

void Cache::NoteRead(Entry& entry) {
  const int64_t now = Now();
  activity_.Touch(now);
  if (config_.replica != ReplicaMode::kAuto) {
    return;
  }
  entry.NoteRead(now);
  int64_t checked = moved_past_checked_ns_.load(std::memory_order_relaxed);
  if (now - checked >= kMovedPastCheckNs
      && moved_past_checked_ns_.compare_exchange_strong(checked, now, std::memory_order_relaxed)) {
    AskReplicasMovedPast(entry, now);
  }
}

void Cache::AskReplicasMovedPast(const Entry& reading, int64_t now_ns) {
  std::vector<std::shared_ptr<Entry>> due;
  {
    MutexLock lock(open_mu_);
    std::erase_if(open_, [&](const std::weak_ptr<Entry>& weak) {
      std::shared_ptr<Entry> e = weak.lock();
      if (!e || e->handles() == 0) {
        return true;  // closed: the last close asked for its replica
      }
      if (e.get() != &reading && e->TakeMovedPast(reading, now_ns, kMovedPastQuietNs)) {
        due.push_back(std::move(e));
      }
      return false;
    });
  }
  // The trace and pages reach the disk first; OnIdle then queues the build.
  for (std::shared_ptr<Entry>& e : due) {
    writer_->RequestPublish(std::move(e), /*then_idle=*/true);
  }
}

Cache::~Cache() {
  FERRY_DEBUG("cache", "closing cache %s", config_.dir.c_str());
  Shutdown();
}

void Cache::Shutdown() {
  if (readahead::Prefetcher* p = prefetcher()) {
    p->Stop();  // no fetch may start once the write-behind queue is stopped
  }
  writer_->Stop();  // drains and publishes; OnWritten may still run until then
  (void)MergeStats();
}

Status Cache::MergeStats() {
  last_merge_ns_.store(Now(), std::memory_order_relaxed);
  return counters_.MergeInto(config_.dir);
}

bool Cache::Flush(std::chrono::milliseconds timeout) {
  return writer_->Flush(timeout);
}

Result<std::unique_ptr<CachedFile>> Cache::PassThrough(std::shared_ptr<Origin> origin) {
  OriginInfo info = FERRY_TRY(origin->Stat());
  return std::unique_ptr<CachedFile>(
      new CachedFile(shared_from_this(), nullptr, std::move(origin), info.size, info.mtime));
}

readahead::Prefetcher& Cache::EnsurePrefetcher() {
  MutexLock lock(prefetcher_mu_);
  if (!prefetcher_) {
    prefetcher_ = config_.prefetcher ? config_.prefetcher
                                     : std::make_shared<readahead::Prefetcher>(
                                         config_.readahead_max_bytes, config_.readahead_fetches,
                                         config_.readahead_fetches_app_waits);
    prefetcher_ptr_.store(prefetcher_.get(), std::memory_order_release);
  }
  return *prefetcher_;
}

Result<std::unique_ptr<CachedFile>> Cache::Open(const std::string& url,
                                                std::shared_ptr<Origin> origin,
                                                const OpenOptions& options) {
  if (options.uncached) {
    return PassThrough(std::move(origin));
  }
  if (options.bulk_reader && config_.bypass) {
    // A copy: neither the entry nor the disk are touched.
    auto file = FERRY_TRY(PassThrough(std::move(origin)));
    file->bypass_.store(true, std::memory_order_relaxed);
    return file;
  }
  auto normalized = NormalizeUrl(url, config_.url_params);
  if (!normalized) {
    return PassThrough(std::move(origin));
  }
  const std::string key = EntryKey(*normalized);
  if (confirmations_) {
    FERRY_TRY(ConfirmAccess(key, *origin));
  }
  std::shared_ptr<Entry> entry;
  {
    MutexLock lock(registry_mu_);
    std::weak_ptr<Entry>& slot = registry_[key];
    entry = slot.lock();
    if (!entry || entry->failed()) {
      entry = std::make_shared<Entry>(config_, counters_, key, *normalized);
      slot = entry;
    }
  }
  auto state = entry->Open(*origin, [this] { return Admit(); });
  if (!state) {
    {
      MutexLock lock(registry_mu_);
      auto it = registry_.find(key);
      if (it != registry_.end() && it->second.lock() == entry) {
        registry_.erase(it);  // the next open tries again
      }
    }
    if (entry->origin_failed()) {
      return std::move(state).error();
    }
    counters_.Add(Counter::kFailopenEvents);
    if (config_.on_fault) {
      config_.on_fault(state.error());
    }
    return PassThrough(std::move(origin));
  }
  if (*state != Entry::OpenState::kReady) {
    if (*state == Entry::OpenState::kCollision) {
      counters_.Add(Counter::kFailopenEvents);
    }
    return PassThrough(std::move(origin));
  }
  entry->AddHandle();
  if (options.zero_copy) {
    entry->AttachVerified(
        [this, &key](uint64_t epoch, uint64_t pages) { return VerifiedFor(key, epoch, pages); });
  }
  if (config_.replica == ReplicaMode::kAuto) {
    MutexLock lock(open_mu_);
    if (std::none_of(open_.begin(), open_.end(),
                     [&](const std::weak_ptr<Entry>& e) { return e.lock() == entry; })) {
      open_.push_back(entry);
    }
  }
  const uint64_t size = entry->size();
  const int64_t mtime = entry->mtime();
  // The layout is fixed for the handle's life: a replica published later is for later opens.
  auto replica = entry->CurrentReplica();
  std::unique_ptr<CachedFile> file(new CachedFile(
      shared_from_this(), std::move(entry), std::move(origin), size, mtime, std::move(replica)));
  file->zero_copy_ = options.zero_copy;
  if (options.detect_bulk && config_.bypass && size >= readahead::BulkDetector::kMinBytes) {
    file->bulk_ = std::make_unique<readahead::BulkDetector>(file->size(), config_.bypass_percent);
  }
  if (options.read_ahead && config_.readahead) {
    readahead::Prefetcher& p = EnsurePrefetcher();
    file->meter_ = &p.Meter(HostOf(*normalized));
    file->ahead_ = std::make_shared<readahead::FileAhead>(
        *file, p, *file->meter_, config_.readahead_max_bytes, config_.max_chunks,
        PathEndsWith(*normalized, ".root"),
        readahead::FileAheadOptions{options.ahead_scope, options.sequential_ahead,
                                    p.ReadOrder(*normalized)});
  }
  return file;
}

std::shared_ptr<VerifiedPages> Cache::VerifiedFor(const std::string& key,
                                                  uint64_t epoch,
                                                  uint64_t page_count) {
  MutexLock lock(verified_mu_);
  VerifiedSlot& slot = verified_[key];
  slot.used = ++verified_uses_;
  if (!slot.pages || slot.pages->epoch() != epoch || slot.pages->page_count() != page_count) {
    slot.pages = std::make_shared<VerifiedPages>(epoch, page_count);
  }
  std::shared_ptr<VerifiedPages> out = slot.pages;
  if (verified_.size() > kMaxVerifiedSets) {
    auto oldest = std::min_element(
        verified_.begin(), verified_.end(),
        [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
    verified_.erase(oldest);  // an open entry keeps its set; its next open starts a new one
  }
  return out;
}

bool Cache::Holds(const std::string& key) {
  {
    MutexLock lock(registry_mu_);
    auto it = registry_.find(key);
    if (it != registry_.end()) {
      std::shared_ptr<Entry> e = it->second.lock();
      if (e && !e->failed()) {
        return true;
      }
    }
  }
  struct stat st = {};
  return ::stat(PathsFor(config_.dir, key).idx().c_str(), &st) == 0;
}

Status Cache::ConfirmAccess(const std::string& key, Origin& origin) {
  if (confirmations_->Fresh(key)) {
    return OkStatus();
  }
  // The origin opens the file with this process's own credentials, exactly as it would
  // without a cache; its answer, not the cache's contents, decides.
  counters_.Add(Counter::kAccessChecks);
  auto info = origin.Stat();
  if (!info) {
    confirmations_->Forget(key);
    if (info.error().code() == ErrorCode::kPermission) {
      counters_.Add(Counter::kAccessRefused);
      FERRY_INFO("cache", "the origin refused entry %s to this user: no cached byte served",
                 key.c_str());
    }
    return std::move(info).error();
  }
  confirmations_->Record(key);
  return OkStatus();
}

Status Cache::Invalidate(const std::string& url) {
  const std::string normalized = FERRY_TRY(NormalizeUrl(url, config_.url_params));
  const std::string key = EntryKey(normalized);
  {
    MutexLock lock(registry_mu_);
    auto it = registry_.find(key);
    if (it != registry_.end()) {
      if (auto e = it->second.lock()) {
        e->Fail(Error(ErrorCode::kCancelled, "invalidated by a writer"));
      }
      registry_.erase(it);
    }
  }
  const EntryPaths paths = PathsFor(config_.dir, key);
  auto lock = LockFile::Open(paths.lock());
  if (!lock) {
    return lock.error().code() == ErrorCode::kNotFound ? OkStatus() : std::move(lock).error();
  }
  FERRY_TRY(
      lock->Lock(kWriteLockByte, /*exclusive=*/true, static_cast<int>(config_.lock_timeout_ms)));
  Status st = RemoveEntryFiles(paths);
  (void)lock->Unlock(kWriteLockByte);
  return st;
}

int64_t Cache::Now() const {
  return config_.clock_ns ? config_.clock_ns() : NowNs();
}

namespace {

// Usage and free space as measured, against the configured limits.
struct Measured {
  uint64_t bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t listed = 0;  // entries with any file
  uint64_t free_inodes = 0;
};

// The first limit `m` passes, or nullptr.
const char* Overrun(const Config& c, const Measured& m) {
  if (m.bytes > c.max_bytes) {
    return "max_size";
  }
  if (m.free_bytes < c.min_free_bytes) {
    return "min_free";
  }
  if (c.max_entries != 0 && m.listed > c.max_entries) {
    return "max_entries";
  }
  return m.free_inodes < c.min_free_inodes ? "min_free_inodes" : nullptr;
}

}  // namespace

bool Cache::MaybeOver() const {
  const uint64_t bytes = last_usage_ + written_since_check_.load(std::memory_order_relaxed);
  const uint64_t admitted = admitted_since_check_.load(std::memory_order_relaxed);
  return bytes > config_.max_bytes
         || (config_.max_entries != 0 && last_listed_ + admitted > config_.max_entries)
         || last_free_inodes_ < config_.min_free_inodes + admitted * kInodesPerEntry;
}

bool Cache::CheckCapacity(bool force) {
  MutexLock lock(capacity_mu_);
  const int64_t now = Now();
  // Between scans, usage is estimated as the last scan plus what this process wrote and
  // created since.
  if (!force && now - last_check_ns_ < kCheckIntervalNs && (!MaybeOver() || over_)) {
    return !over_;
  }
  if (over_ && now - last_check_ns_ < kMinCheckGapNs) {
    return false;  // known to be over: do not rescan on every write batch
  }
  last_check_ns_ = now;
  written_since_check_.store(0, std::memory_order_relaxed);
  admitted_since_check_.store(0, std::memory_order_relaxed);
  const char* over = MeasureAndEvict();
  if ((over != nullptr) != over_) {
    // The cache stops or starts taking new files: pages of files not admitted are read through
    // and counted (admissions_declined); the log says why.
    if (over != nullptr) {
      FERRY_WARN("cache", "%s: over %s after eviction: new files are read through uncached",
                 config_.dir.c_str(), over);
    } else {
      FERRY_INFO("cache", "%s: back under its limits: caching new files again",
                 config_.dir.c_str());
    }
  }
  over_ = over != nullptr;
  over_now_.store(over_, std::memory_order_relaxed);
  writer_->SetBlocked(over_);
  return !over_;
}

const char* Cache::MeasureAndEvict() {
  auto usage = MeasureUsage(config_.dir);
  auto free_bytes = FreeBytes(config_.dir);
  auto free_inodes = FreeInodes(config_.dir);
  if (!usage || !free_bytes || !free_inodes) {
    return "unmeasurable usage";  // cannot tell: admit nothing new, keep serving what is there
  }
  last_usage_ = usage->disk_bytes;
  last_listed_ = usage->listed;
  last_free_inodes_ = *free_inodes;
  if (Overrun(config_, {usage->disk_bytes, *free_bytes, usage->listed, *free_inodes}) == nullptr) {
    return nullptr;
  }
  // Evict to 90% of the caps and 110% of the inode floor, so that the next new files do not
  // start another scan at once.
  EvictOptions opts;
  opts.target_bytes = config_.max_bytes - config_.max_bytes / 10;
  opts.min_free_bytes = std::max(config_.min_free_bytes, config_.evict_to_free_bytes);
  opts.target_entries =
      config_.max_entries != 0 ? config_.max_entries - config_.max_entries / 10 : UINT64_MAX;
  opts.min_free_inodes = config_.min_free_inodes + config_.min_free_inodes / 10;
  auto r = Evict(config_.dir, opts);
  if (!r || r->busy) {
    return "eviction running elsewhere";  // the other evictor frees room: check again soon
  }
  counters_.Add(Counter::kEvictions, r->evicted);
  last_usage_ = r->after.disk_bytes;
  last_listed_ = r->after.listed;
  last_free_inodes_ = FreeInodes(config_.dir).value_or(0);
  return Overrun(config_, {r->after.disk_bytes, FreeBytes(config_.dir).value_or(0), r->after.listed,
                           last_free_inodes_});
}

bool Cache::Admit() {
  admitted_since_check_.fetch_add(1, std::memory_order_relaxed);
  if (CheckCapacity(/*force=*/false)) {
    return true;
  }
  counters_.Add(Counter::kAdmissionsDeclined);
  return false;
}

void Cache::OnWritten(uint64_t bytes) {
  const uint64_t since = written_since_check_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  // Cheap unless a scan is due: every kCheckEveryBytes, or when the estimate passes the cap.
  CheckCapacity(/*force=*/since >= kCheckEveryBytes);
  if (Now() - last_merge_ns_.load(std::memory_order_relaxed) > kMergeIntervalNs) {
    (void)MergeStats();
  }
}

}  // namespace ferry::cache
