#include "cache/entry.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>

#include "base/log.h"
#include "cache/dir_access.h"
#include "cache/page_crc.h"
#include "cache/replica_hooks.h"

namespace ferry::cache {
namespace {

uint64_t RandomEpoch() {
  std::random_device rd;
  uint64_t v = (uint64_t{rd()} << 32) ^ rd();
  v ^= static_cast<uint64_t>(NowNs()) * uint64_t{0x9E3779B97F4A7C15}
       ^ static_cast<uint64_t>(::getpid());
  return v == 0 ? 1 : v;
}

}  // namespace

// ---- Fetch ----

Fetch::Fetch(std::span<const fetch::Range> chunks)
    : chunks_(chunks.begin(), chunks.end()),
      pos_(chunks.size()),
      ok_(chunks.size(), 0),
      errors_(chunks.size()) {
  uint64_t total = 0;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    pos_[i] = total;
    total += chunks_[i].length;
  }
  buffer_ = std::make_unique_for_overwrite<uint8_t[]>(std::max<uint64_t>(total, 1));
  size_ = total;
}

std::span<uint8_t> Fetch::ChunkBuffer(size_t i) {
  return {buffer_.get() + pos_[i], chunks_[i].length};
}

std::span<const uint8_t> Fetch::ChunkData(size_t i) const {
  return {buffer_.get() + pos_[i], chunks_[i].length};
}

uint64_t Fetch::ok_bytes() const {
  uint64_t n = 0;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    n += ok_[i] != 0 ? chunks_[i].length : 0;
  }
  return n;
}

void Fetch::Finish() {
  {
    MutexLock lock(mu_);
    done_ = true;
  }
  cv_.NotifyAll();
}

void Fetch::Wait() const {
  MutexLock lock(mu_);
  while (!done_) {
    cv_.Wait(mu_);
  }
}

void Fetch::SetStatus(size_t i, const Status& st) {
  ok_[i] = st ? 1 : 0;
  if (!st) {
    errors_[i] = st.error();
  }
}

long Fetch::ChunkAt(uint64_t offset) const {
  auto it = std::upper_bound(chunks_.begin(), chunks_.end(), offset,
                             [](uint64_t off, const fetch::Range& r) { return off < r.offset; });
  if (it == chunks_.begin()) {
    return -1;
  }
  const auto i = static_cast<size_t>(it - chunks_.begin()) - 1;
  return offset < chunks_[i].end() ? static_cast<long>(i) : -1;
}

size_t Fetch::CopyPrefix(uint64_t offset, std::span<uint8_t> dest) const {
  const long at = ChunkAt(offset);
  if (at < 0 || ok_[static_cast<size_t>(at)] == 0) {
    return 0;
  }
  const auto i = static_cast<size_t>(at);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(dest.size(), chunks_[i].end() - offset));
  std::memcpy(dest.data(), buffer_.get() + pos_[i] + (offset - chunks_[i].offset), n);
  return n;
}

// ---- Entry: opening ----

Entry::Entry(const Config& config, Counters& counters, std::string key, std::string url)
    : config_(config),
      counters_(counters),
      key_(std::move(key)),
      url_(std::move(url)),
      paths_(PathsFor(config.dir, key_)) {}

Entry::~Entry() = default;

void Entry::Fail(const Error& why) {
  if (!failed_.exchange(true, std::memory_order_acq_rel)) {
    counters_.Add(Counter::kFailopenEvents);
    // Info, not warn: the analysis goes on at the origin's bytes, and a warning line on every
    // process's stderr would be noise; `ferry cache stats` counts the faults for the admin.
    FERRY_INFO("cache", "entry %s fails open: %s", url_.c_str(), why.ToString().c_str());
    if (config_.on_fault) {
      config_.on_fault(why);
    }
  }
}

Result<Entry::OpenState> Entry::Open(Origin& origin, const std::function<bool()>& admit) {
  MutexLock guard(open_mu_);
  if (!open_done_) {
    open_status_ = OpenLocked(origin, admit, open_state_);
    open_done_ = true;
  }
  if (!open_status_) {
    return open_status_.error();
  }
  return open_state_;
}

Status Entry::LockOpenByte() {
  for (int attempt = 0; attempt < 4; ++attempt) {
    lock_ = FERRY_TRY(LockFile::Open(paths_.lock()));
    FERRY_TRY(
        lock_.Lock(kOpenLockByte, /*exclusive=*/false, static_cast<int>(config_.lock_timeout_ms)));
    if (lock_.StillLinked()) {
      return OkStatus();
    }
    // An evictor removed the entry between our open and our lock: start over.
  }
  return Error(ErrorCode::kTimeout, "entry lock file keeps being replaced: " + paths_.lock());
}

Status Entry::OpenLocked(Origin& origin, const std::function<bool()>& admit, OpenState& state) {
  FERRY_TRY(MakeCacheSubdir(paths_.subdir));
  FERRY_TRY(LockOpenByte());
  IndexStamp stamp;
  auto loaded = LoadIndex(paths_.idx(), &stamp);
  if (loaded) {
    if (loaded->info().url != url_) {
      state = OpenState::kCollision;
      return OkStatus();
    }
    // A key that does not open the entry leaves it alone (it may be a misconfiguration); a
    // plaintext entry met with a key is replaced by an encrypted one below.
    FERRY_TRY(CheckKey(*loaded));
    const bool plain_with_key = config_.master_key && !loaded->encrypted();
    const int64_t now = std::time(nullptr);
    if (plain_with_key || config_.revalidate_s == 0
        || now - loaded->info().validated_unix >= config_.revalidate_s) {
      auto info = origin.Stat();
      if (!info) {
        origin_failed_ = true;
        return std::move(info).error();
      }
      if (plain_with_key || info->size != loaded->info().origin_size
          || info->mtime != loaded->info().origin_mtime) {
        FERRY_TRY(Create(*info, /*recreate=*/true));
        return OpenDataFiles();
      }
      loaded->mutable_info().validated_unix = now;
      dirty_ = true;
    }
    FERRY_TRY(AdoptIndex(std::move(*loaded), stamp));
    return OpenDataFiles();
  }
  if (loaded.error().code() == ErrorCode::kNotFound) {
    if (!admit()) {
      state = OpenState::kDeclined;
      return OkStatus();
    }
    auto info = origin.Stat();
    if (!info) {
      origin_failed_ = true;
      return std::move(info).error();
    }
    FERRY_TRY(Create(*info, /*recreate=*/false));
    return OpenDataFiles();
  }
  if (loaded.error().code() == ErrorCode::kCorruption) {
    // This open reads from the origin; remove the bad entry so that the next open recreates it.
    Status busy;
    if (TryLockForWrite(busy)) {
      (void)RemoveEntryFiles(paths_);
      UnlockForWrite();
    }
  }
  return std::move(loaded).error();
}

Status Entry::Create(const OriginInfo& info, bool recreate) {
  Status why;
  if (!TryLockForWrite(why)) {
    return why;
  }
  Status st = CreateLocked(info, recreate);
  UnlockForWrite();
  return st;
}

Status Entry::CheckKey(const PageIndex& index) const {
  const MasterKey* master = config_.master_key.get();
  if (!index.encrypted() || (master != nullptr && master->id() == index.info().key_id)) {
    return OkStatus();
  }
  const std::string held = KeyIdHex(index.info().key_id);
  Error why = master == nullptr
                  ? Error(ErrorCode::kPermission,
                          "cache entry " + paths_.base + " is encrypted (master key id " + held
                              + ") and no cache_key_file (--encrypt-key) is set")
                  : Error(ErrorCode::kPermission,
                          "cache entry " + paths_.base + " is encrypted under master key id " + held
                              + ", but the key file " + config_.key_file + " has id "
                              + KeyIdHex(master->id()) + " (wrong key file?)");
  // Once per process, not per file: every entry of the directory says the same.
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    FERRY_WARN("cache", "%s; reading from the origin", why.message().c_str());
  }
  return why;
}

Status Entry::AdoptIndex(PageIndex index, const IndexStamp& stamp) {
  // One opener runs this before any reader sees the entry, so the copies below need no lock
  // when read later; index_ itself is guarded because refreshes replace it.
  FERRY_TRY(CheckKey(index));
  if (index.encrypted()) {
    KeyBytes data_key = FERRY_TRY(config_.master_key->Unwrap(index.info().wrapped_key));
    sealer_ = std::make_unique<const PageSealer>(data_key, std::strtoull(key_.c_str(), nullptr, 16),
                                                 index.info().epoch);
    WipeKey(data_key);
  }
  epoch_ = index.info().epoch;
  size_ = index.info().origin_size;
  mtime_ = index.info().origin_mtime;
  page_size_ = index.page_size();
  {
    WriterLock lock(mu_);
    index_ = std::move(index);
  }
  MutexLock guard(refresh_mu_);
  stamp_ = stamp;
  return OkStatus();
}

Status Entry::CreateLocked(const OriginInfo& info, bool recreate) {
  IndexStamp stamp;
  auto existing = LoadIndex(paths_.idx(), &stamp);
  const bool keyed = config_.master_key != nullptr;
  if (!recreate && existing && existing->info().url == url_
      && existing->info().origin_size == info.size && existing->info().origin_mtime == info.mtime
      && existing->encrypted() == keyed) {
    // Another process created it between our look and our lock.
    FERRY_TRY(AdoptIndex(std::move(*existing), stamp));
  } else {
    IndexInfo fresh;
    fresh.url = url_;
    fresh.page_size = config_.page_size;
    fresh.origin_size = info.size;
    fresh.origin_mtime = info.mtime;
    fresh.epoch = RandomEpoch();
    fresh.generation = 1;
    fresh.created_unix = std::time(nullptr);
    fresh.validated_unix = fresh.created_unix;
    if (keyed) {
      // A new incarnation, a new data key: pages of an earlier one never open under it.
      KeyBytes data_key = RandomDataKey();
      fresh.encrypted = true;
      fresh.key_id = config_.master_key->id();
      fresh.wrapped_key = config_.master_key->Wrap(data_key);
      WipeKey(data_key);
      // A replica of a plaintext predecessor would leave its baskets on disk in the clear.
      ::unlink(paths_.manifest().c_str());
      RemoveReplicaData(paths_, 0);
    }
    for (const std::string& f : {paths_.data(), paths_.frag()}) {
      Fd fd = FERRY_TRY(OpenCacheFile(f, O_RDWR | O_TRUNC));
    }
    PageIndex index(std::move(fresh));
    std::vector<uint8_t> scratch;
    // No fsync: after a crash there is either no index or this empty one, both harmless.
    FERRY_TRY(PublishIndex(paths_, index, /*sync=*/false, scratch, &stamp));
    FERRY_TRY(AdoptIndex(std::move(index), stamp));
  }
  frag_end_ = 0;
  return OkStatus();
}

Status Entry::OpenDataFiles() {
  data_fd_ = FERRY_TRY(OpenCacheFile(paths_.data(), O_RDWR));
  frag_fd_ = FERRY_TRY(OpenCacheFile(paths_.frag(), O_RDWR));
  lock_.Touch();
  // A replica counts as a trace: a complete build empties KEY.acc (the replica holds the
  // layout its records asked for), and its passes are traced from a miss on, as before.
  struct stat trace = {};
  has_trace_.store((::stat(paths_.trace().c_str(), &trace) == 0 && trace.st_size > 0)
                       || ::access(paths_.manifest().c_str(), F_OK) == 0,
                   std::memory_order_relaxed);
  return OkStatus();
}

void Entry::TouchLastRead() const {
  if (lock_.valid()) {
    lock_.Touch();
  }
}

// ---- Entry: read side ----

void Entry::DropPages(std::span<const uint64_t> pages) {
  if (pages.empty()) {
    return;
  }
  counters_.Add(Counter::kCrcFailures, pages.size());
  WriterLock lock(mu_);
  for (uint64_t p : pages) {
    index_.Drop(p);
  }
}

bool Entry::RefreshIfChanged(bool force) {
  const int64_t now = NowNs();
  if (!force && now - last_refresh_ns_.load(std::memory_order_relaxed) < 20'000'000) {
    return false;
  }
  last_refresh_ns_.store(now, std::memory_order_relaxed);
  std::vector<std::pair<uint64_t, Fragment>> theirs;
  return MergePublished(/*under_write_lock=*/false, theirs).value_or(false);
}

std::optional<bool> Entry::MergePublished(bool under_write_lock,
                                          std::vector<std::pair<uint64_t, Fragment>>& theirs) {
  MutexLock guard(refresh_mu_);
  if (!reload_pending_ && StampOf(paths_.idx()) == stamp_) {
    return std::nullopt;
  }
  IndexStamp stamp;
  auto disk = LoadIndex(paths_.idx(), &stamp);
  if (!disk) {
    Fail(disk.error().code() == ErrorCode::kNotFound
             ? Error(ErrorCode::kNotFound, "entry removed by another process")
             : disk.error());
    return false;
  }
  if (disk->info().epoch != epoch_) {
    Fail(Error(ErrorCode::kCorruption, "entry recreated by another process"));
    return false;
  }
  WriterLock lock(mu_);
  const uint64_t before = index_.held_bytes();
  MergeFrom(*disk, theirs);
  stamp_ = stamp;
  // Fragments both sides grew in one page are combined under the write lock (RefreshForWrite);
  // until then the next write-locked refresh must look again.
  reload_pending_ = !theirs.empty() && !under_write_lock;
  return index_.held_bytes() != before;
}

bool Entry::RefreshForWrite() {
  std::vector<std::pair<uint64_t, Fragment>> theirs;
  const std::optional<bool> merged = MergePublished(/*under_write_lock=*/true, theirs);
  if (!merged) {
    return false;
  }
  // Another process publishes this entry too: publish after every batch while it does.
  shared_writer_until_ns_ = NowNs() + 5'000'000'000;
  bool added = *merged;
  // Combine: their bytes go through the same merge as freshly fetched bytes.
  std::vector<uint8_t> buf;
  std::vector<uint8_t> scratch;
  for (const auto& [page, f] : theirs) {
    buf.resize(f.length());
    if (ReadFragment(page, f, buf.data()) && CheckFragmentBytes(sealer_.get(), page, f, buf)) {
      (void)StorePiece(page * page_size_ + f.lo, buf, scratch);
      added = true;
    }
  }
  return added;
}

// Another process's published index into ours. Only adds: a page full on disk is full here too
// (its bytes are in the shared data file, at its own offset, and its CRC comes along), and a
// fragment we lack is taken as it is (it lies in the shared fragment log, below the frag_bytes
// we also take). What is never merged away is ours: a page both processes grew as different
// fragments goes to `theirs`, for the writer to combine under the write lock.
void Entry::MergeFrom(const PageIndex& disk, std::vector<std::pair<uint64_t, Fragment>>& theirs) {
  const auto& words = disk.bitmap_words();
  const auto& mine = index_.bitmap_words();
  for (size_t w = 0; w < words.size() && w < mine.size(); ++w) {
    for (uint64_t bits = words[w] & ~mine[w]; bits != 0; bits &= bits - 1) {
      const uint64_t page = w * 64 + static_cast<unsigned>(std::countr_zero(bits));
      if (index_.encrypted()) {
        index_.SetFullSealed(page, disk.seal(page));
      } else {
        index_.SetFull(page, disk.crc(page));
      }
    }
  }
  for (const auto& [page, f] : disk.fragments()) {
    if (index_.full(page)) {
      continue;
    }
    const Fragment* have = index_.fragment(page);
    if (have == nullptr) {
      index_.SetFragment(page, f);
    } else if (have->offset != f.offset || have->lo != f.lo || have->hi != f.hi
               || have->in_data != f.in_data) {
      theirs.emplace_back(page, f);  // both grew this page: combined by the caller
    }
  }
  IndexInfo& info = index_.mutable_info();
  info.frag_bytes = std::max(info.frag_bytes, disk.info().frag_bytes);
  info.generation = std::max(info.generation, disk.info().generation);
  info.validated_unix = std::max(info.validated_unix, disk.info().validated_unix);
  // The published wrapping is the current one (`ferry cache rekey` may have replaced it under
  // the write lock): ours would undo the rotation at our next publish.
  info.key_id = disk.info().key_id;
  info.wrapped_key = disk.info().wrapped_key;
}

// ---- Entry: in-flight registry ----

void Entry::ClaimInflight(std::span<const fetch::Range> need,
                          std::span<const fetch::Range> coming,
                          std::vector<fetch::Range>& own,
                          std::vector<std::pair<fetch::Range, std::shared_ptr<Fetch>>>& joined,
                          const std::function<std::shared_ptr<Fetch>()>& make_fetch) {
  own.clear();
  joined.clear();
  MutexLock lock(inflight_mu_);
  // inflight_ is sorted by offset and its ranges never overlap (each was claimed as "own").
  // Joins the parts of r in flight; the parts between go to `own` when `claim`.
  const auto split = [&](const fetch::Range& r, bool claim) FERRY_REQUIRES(inflight_mu_) {
    auto it = std::upper_bound(inflight_.begin(), inflight_.end(), r.offset,
                               [](uint64_t off, const auto& e) { return off < e.first.offset; });
    if (it != inflight_.begin() && std::prev(it)->first.end() > r.offset) {
      --it;
    }
    uint64_t pos = r.offset;
    while (pos < r.end()) {
      if (it != inflight_.end() && it->first.offset <= pos) {
        const uint64_t stop = std::min(r.end(), it->first.end());
        joined.push_back({{pos, stop - pos}, it->second});
        pos = stop;
        ++it;
        continue;
      }
      const uint64_t stop = it != inflight_.end() ? std::min(r.end(), it->first.offset) : r.end();
      if (claim) {
        own.push_back({pos, stop - pos});
      }
      pos = stop;
    }
  };
  for (const fetch::Range& r : need) {
    split(r, /*claim=*/true);
  }
  for (const fetch::Range& r : coming) {
    split(r, /*claim=*/false);
  }
  if (own.empty()) {
    return;
  }
  std::shared_ptr<Fetch> f = make_fetch();
  for (const fetch::Range& r : own) {
    inflight_.emplace_back(r, f);
  }
  std::sort(inflight_.begin(), inflight_.end(),
            [](const auto& a, const auto& b) { return a.first.offset < b.first.offset; });
}

void Entry::InflightRanges(std::vector<fetch::Range>& out) {
  out.clear();
  MutexLock lock(inflight_mu_);
  for (const auto& e : inflight_) {
    out.push_back(e.first);
  }
}

void Entry::ReleaseInflight(const Fetch* fetch) {
  MutexLock lock(inflight_mu_);
  std::erase_if(inflight_, [fetch](const auto& e) { return e.second.get() == fetch; });
}

// ---- Entry: write side ----

bool Entry::TryLockForWrite(Status& why) {
  write_mu_.Lock();
  Status st =
      lock_.Lock(kWriteLockByte, /*exclusive=*/true, static_cast<int>(config_.lock_timeout_ms));
  if (!st) {
    write_mu_.Unlock();
    why = std::move(st);
    return false;
  }
  if (frag_fd_.valid()) {
    struct stat fs = {};
    if (::fstat(frag_fd_.get(), &fs) == 0) {
      frag_end_ = static_cast<uint64_t>(fs.st_size);
    }
  }
  return true;
}

void Entry::UnlockForWrite() {
  (void)lock_.Unlock(kWriteLockByte);
  write_mu_.Unlock();
}

Status Entry::Store(const Fetch& fetch, std::vector<uint8_t>& scratch) {
  if (epoch_ != 0) {
    RefreshForWrite();
  }
  if (failed()) {
    return Error(ErrorCode::kCancelled, "entry failed");
  }
  for (size_t i = 0; i < fetch.chunks().size(); ++i) {
    if (fetch.ok(i)) {
      FERRY_TRY(StorePiece(fetch.chunks()[i].offset, fetch.ChunkData(i), scratch));
    }
  }
  return OkStatus();
}

Status Entry::StorePiece(uint64_t offset,
                         std::span<const uint8_t> bytes,
                         std::vector<uint8_t>& scratch) {
  const uint64_t ps = page_size_;
  const uint64_t end = offset + bytes.size();
  uint64_t pos = offset;
  while (pos < end) {
    const uint64_t page = pos / ps;
    const uint64_t pstart = page * ps;
    // From the sizes fixed at open, not index_.PageLength: mu_ is not held here.
    const uint32_t plen = PageLengthOf(page, page_size_, size_);
    const uint64_t seg_end = std::min(end, pstart + plen);
    if (plen == 0) {
      break;
    }
    const auto lo = static_cast<uint32_t>(pos - pstart);
    const auto hi = static_cast<uint32_t>(seg_end - pstart);
    std::span<const uint8_t> data = bytes.subspan(pos - offset, seg_end - pos);
    pos = seg_end;
    bool full = false;
    std::optional<Fragment> have;
    {
      ReaderLock lock(mu_);
      full = index_.full(page);
      if (const Fragment* f = index_.fragment(page)) {
        have = *f;
      }
    }
    if (full) {
      continue;
    }
    if (lo == 0 && hi == plen && !have) {
      pos = FERRY_TRY(StoreFullRun(page, offset, bytes));
    } else {
      FERRY_TRY(StorePartOfPage(page, lo, data, have, scratch));
    }
  }
  return OkStatus();
}

Result<uint64_t> Entry::StoreFullRun(uint64_t page,
                                     uint64_t offset,
                                     std::span<const uint8_t> bytes) {
  const uint64_t ps = page_size_;
  const uint64_t end = offset + bytes.size();
  const uint64_t pstart = page * ps;
  uint64_t last = page;
  uint64_t run_end = pstart + PageLengthOf(page, page_size_, size_);
  {
    ReaderLock lock(mu_);
    while (last - page < 255) {
      const uint64_t next = last + 1;
      const uint32_t nlen = PageLengthOf(next, page_size_, size_);
      if (nlen == 0 || next * ps + nlen > end || index_.full(next)
          || index_.fragment(next) != nullptr) {
        break;
      }
      last = next;
      run_end = next * ps + nlen;
    }
  }
  const std::span<const uint8_t> run = bytes.subspan(pstart - offset, run_end - pstart);
  uint32_t crcs[256];
  Seal seals[256];
  const uint8_t* out = run.data();
  if (sealer_) {
    sealed_.resize(run.size());
    out = sealed_.data();
  }
  for (uint64_t k = page; k <= last; ++k) {
    const uint64_t at = (k - page) * ps;
    const std::span<const uint8_t> plain = run.subspan(at, PageLengthOf(k, page_size_, size_));
    if (sealer_) {
      seals[k - page] = sealer_->SealBytes(k, 0, plain, sealed_.data() + at);
    } else {
      crcs[k - page] = PageCrc(plain.data(), plain.size());
    }
  }
  FERRY_TRY(PwriteFull(data_fd_.get(), out, run.size(), pstart));
  {
    WriterLock lock(mu_);
    for (uint64_t k = page; k <= last; ++k) {
      sealer_ ? index_.SetFullSealed(k, seals[k - page]) : index_.SetFull(k, crcs[k - page]);
    }
  }
  dirty_.store(true, std::memory_order_relaxed);
  return run_end;
}

Status Entry::StorePartOfPage(uint64_t page,
                              uint32_t lo,
                              std::span<const uint8_t> data,
                              const std::optional<Fragment>& have,
                              std::vector<uint8_t>& scratch) {
  const uint64_t ps = page_size_;
  const uint32_t plen = PageLengthOf(page, page_size_, size_);
  const auto hi = static_cast<uint32_t>(lo + data.size());
  uint32_t nlo = lo;
  uint32_t nhi = hi;
  if (have && hi >= have->lo && lo <= have->hi) {
    // Touches the held fragment: merge the two (the new bytes win where they overlap).
    if (scratch.size() < ps) {
      scratch.resize(ps);
    }
    std::span<uint8_t> held(scratch.data() + have->lo, have->length());
    if (ReadFragment(page, *have, held.data())
        && CheckFragmentBytes(sealer_.get(), page, *have, held)) {
      std::memcpy(scratch.data() + lo, data.data(), data.size());
      nlo = std::min(lo, have->lo);
      nhi = std::max(hi, have->hi);
      data = std::span<const uint8_t>(scratch.data() + nlo, nhi - nlo);
    }
  } else if (have) {
    // Disjoint: the longer of the two stays in the page and the other waits in memory for
    // the bytes between them (another fetch may be storing them next).
    if (have->length() >= hi - lo) {
      KeepOrphan(page, lo, data);
      return OkStatus();
    }
    if (scratch.size() < ps) {
      scratch.resize(ps);
    }
    std::span<uint8_t> held(scratch.data(), have->length());
    if (ReadFragment(page, *have, held.data())
        && CheckFragmentBytes(sealer_.get(), page, *have, held)) {
      KeepOrphan(page, have->lo, held);
    }
  }
  if (nlo == 0 && nhi == plen) {
    uint32_t crc = 0;
    Seal seal;
    const std::span<const uint8_t> out = SealForWrite(page, 0, data, crc, seal);
    FERRY_TRY(PwriteFull(data_fd_.get(), out.data(), out.size(), page * ps));
    WriterLock lock(mu_);
    sealer_ ? index_.SetFullSealed(page, seal) : index_.SetFull(page, crc);
  } else {
    FERRY_TRY(AppendFragment(page, nlo, data));
  }
  dirty_.store(true, std::memory_order_relaxed);
  return RetryOrphans(page, scratch);  // `data` (maybe in scratch) is no longer used
}

void Entry::KeepOrphan(uint64_t page, uint32_t lo, std::span<const uint8_t> bytes) {
  if (orphans_.size() >= kMaxOrphans) {
    orphans_.erase(orphans_.begin());  // the oldest: its gap is the least likely to come
  }
  orphans_.push_back({page, lo, {bytes.begin(), bytes.end()}});
}

Status Entry::RetryOrphans(uint64_t page, std::vector<uint8_t>& scratch) {
  if (orphans_.empty()) {
    return OkStatus();
  }
  std::vector<Orphan> mine;
  for (auto it = orphans_.begin(); it != orphans_.end();) {
    if (it->page == page) {
      mine.push_back(std::move(*it));
      it = orphans_.erase(it);
    } else {
      ++it;
    }
  }
  // Each is stored as if it arrived now: merged if it touches the page's fragment at last, kept
  // waiting again if not (the page changed elsewhere), dropped if the page became full.
  for (const Orphan& o : mine) {
    FERRY_TRY(StorePiece(page * page_size_ + o.lo, o.bytes, scratch));
  }
  return OkStatus();
}

// An unencrypted fragment is written into the data file at its own offset (in_data), so that
// a range whose edge pages are fragments is read back with one pread of the data file and can
// be sent from it (docs/format/page-store.md, "Fragments in the data file"). A fragment that
// grows is written over its old bytes there: they are the same bytes of the origin, so a reader
// of an older index reads what its index names.
//
// An encrypted fragment goes to the log, which is append-only: a fragment that grows is written
// anew at the end and the old bytes become garbage, so the bytes an earlier published index
// names stay where it says (another process may still read by it) until compaction, which runs
// only while no other process has the entry open.
Status Entry::AppendFragment(uint64_t page, uint32_t lo, std::span<const uint8_t> bytes) {
  Fragment f;
  const std::span<const uint8_t> out = SealForWrite(page, lo, bytes, f.crc, f.seal);
  if (sealer_) {
    FERRY_TRY(PwriteFull(frag_fd_.get(), out.data(), out.size(), frag_end_));
    f.offset = frag_end_;
    frag_end_ += bytes.size();
  } else {
    FERRY_TRY(PwriteFull(data_fd_.get(), out.data(), out.size(), page * page_size_ + lo));
    f.in_data = true;
  }
  f.lo = lo;
  f.hi = lo + static_cast<uint32_t>(bytes.size());
  WriterLock lock(mu_);
  index_.SetFragment(page, f);
  return OkStatus();
}

Status Entry::ReadFragment(uint64_t page, const Fragment& f, uint8_t* out) const {
  return f.in_data ? PreadFull(data_fd_.get(), out, f.length(), page * page_size_ + f.lo)
                   : PreadFull(frag_fd_.get(), out, f.length(), f.offset);
}

std::span<const uint8_t> Entry::SealForWrite(
    uint64_t page, uint32_t lo, std::span<const uint8_t> plain, uint32_t& crc, Seal& seal) {
  if (!sealer_) {
    crc = PageCrc(plain.data(), plain.size());
    return plain;
  }
  sealed_.resize(plain.size());
  seal = sealer_->SealBytes(page, lo, plain, sealed_.data());
  return sealed_;
}

Status Entry::MaybePublish(bool force, std::vector<uint8_t>& scratch) {
  if (!dirty_.load(std::memory_order_relaxed) || failed()) {
    return OkStatus();
  }
  const int64_t now = NowNs();
  if (!force && now >= shared_writer_until_ns_
      && now - last_publish_ns_ < int64_t{config_.publish_ms} * 1'000'000) {
    return OkStatus();
  }
  // Never publish over pages another process published since we last looked.
  RefreshForWrite();
  if (failed()) {
    return OkStatus();
  }
  if (config_.sync) {
    if (::fdatasync(data_fd_.get()) != 0 || ::fdatasync(frag_fd_.get()) != 0) {
      return IoError("fdatasync of " + paths_.base, errno);
    }
  }
  {
    WriterLock lock(mu_);
    IndexInfo& info = index_.mutable_info();
    info.generation += 1;
    info.frag_bytes = std::max(info.frag_bytes, frag_end_);
    index_.Encode(scratch);
  }
  IndexStamp stamp;
  FERRY_TRY(PublishIndexBytes(paths_, scratch, config_.sync, &stamp));
  {
    MutexLock guard(refresh_mu_);
    stamp_ = stamp;
  }
  dirty_.store(false, std::memory_order_relaxed);
  last_publish_ns_ = now;
  return OkStatus();
}

// ---- Entry: replica ----

std::shared_ptr<const VirtualFile> Entry::CurrentReplica() {
  if (config_.replica == ReplicaMode::kOff || !config_.replica_hooks || epoch_ == 0) {
    return nullptr;
  }
  const IndexStamp stamp = StampOf(paths_.manifest());
  MutexLock lock(replica_mu_);
  if (stamp == replica_stamp_) {
    return replica_;
  }
  replica_stamp_ = stamp;
  replica_.reset();
  if (stamp.ino == 0) {
    return nullptr;
  }
  IndexInfo info;
  info.url = url_;
  info.epoch = epoch_;
  info.origin_size = size_;
  info.origin_mtime = mtime_;
  auto view = config_.replica_hooks->OpenVirtual(paths_, info, sealer_.get());
  if (!view) {
    // A replica that cannot be used: the original layout serves, and the next build replaces it.
    counters_.Add(Counter::kReplicaFaults);
    FERRY_INFO("cache", "replica of %s not used: %s", url_.c_str(),
               view.error().ToString().c_str());
    return nullptr;
  }
  replica_ = std::move(*view);
  return replica_;
}

// ---- Entry: access trace ----

void Entry::RecordAccess(uint64_t generation, std::span<const io::ReadRequest> requests) {
  constexpr size_t kMaxPending = 1u << 20;
  if (!config_.replica_hooks) {
    return;
  }
  // Encoded outside the lock into the thread's buffer (no allocation once warm).
  thread_local std::vector<uint8_t> record;
  record.clear();
  config_.replica_hooks->EncodeAccess(generation, requests, record);
  MutexLock lock(trace_mu_);
  if (trace_full_ || trace_buffer_.size() > kMaxPending) {
    return;
  }
  trace_buffer_.insert(trace_buffer_.end(), record.begin(), record.end());
  trace_pending_.store(true, std::memory_order_relaxed);
  replica_wish_.store(true, std::memory_order_relaxed);
  has_trace_.store(true, std::memory_order_relaxed);
}

void Entry::NoteRead(int64_t now_ns) {
  int64_t never = INT64_MIN;
  first_read_ns_.compare_exchange_strong(never, now_ns, std::memory_order_relaxed);
  last_read_ns_.store(now_ns, std::memory_order_relaxed);
}

bool Entry::TakeMovedPast(const Entry& reading, int64_t now_ns, int64_t quiet_ns) {
  constexpr int kMaxDoublings = 5;
  const int64_t last = last_read_ns_.load(std::memory_order_relaxed);
  const int early = std::min(early_builds_.load(std::memory_order_relaxed), kMaxDoublings);
  if (last == INT64_MIN
      || reading.first_read_ns_.load(std::memory_order_relaxed)
             <= first_read_ns_.load(std::memory_order_relaxed)
      || !replica_wish() || failed() || now_ns - last < (quiet_ns << early)) {
    return false;
  }
  {
    MutexLock lock(inflight_mu_);
    if (!inflight_.empty()) {
      return false;
    }
  }
  if (moved_past_read_ns_.exchange(last, std::memory_order_relaxed) == last) {
    return false;  // this quiet spell already asked
  }
  early_builds_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::optional<bool> Entry::RootMagic() {
  uint8_t magic[4] = {};
  ServeScratch scratch;
  std::vector<Piece> missing;
  if (size_ < sizeof magic) {
    return false;
  }
  ReaderLock lock(mu_);
  auto got = Serve(0, 0, magic, scratch, missing);
  if (!got || *got != sizeof magic) {
    return std::nullopt;
  }
  return std::memcmp(magic, "root", 4) == 0;
}

bool Entry::LooksLikeRoot() {
  return RootMagic().value_or(false);
}

void Entry::FlushTrace() {
  // Only ROOT files get replicas: other files keep no trace (it would only take disk). Until
  // the first bytes are stored the answer is not known, and the records wait: a reader's
  // first reads may be recorded before the fetch of the file's first page is stored (the
  // writer stores one entry's fetches in the order they were queued, and read-ahead's tail
  // fetch may come first), and dropping them left a whole pass untraced. Asked only when
  // records wait: the answer reads the first page, and this runs after every batch stored.
  {
    MutexLock lock(trace_mu_);
    if (trace_buffer_.empty() || trace_full_) {
      trace_buffer_.clear();
      trace_pending_.store(false, std::memory_order_relaxed);
      return;
    }
  }
  const std::optional<bool> root = RootMagic();
  if (!root.has_value()) {
    return;
  }
  std::vector<uint8_t> pending;
  {
    MutexLock lock(trace_mu_);
    pending.swap(trace_buffer_);
    trace_pending_.store(false, std::memory_order_relaxed);
  }
  if (!*root) {
    return;
  }
  auto fd = OpenCacheFile(paths_.trace(), O_WRONLY | O_APPEND);
  if (!fd) {
    return;
  }
  struct stat st = {};
  if (::fstat(fd->get(), &st) != 0
      || static_cast<uint64_t>(st.st_size) + pending.size()
             > config_.replica_hooks->access_log_max_bytes()) {
    MutexLock lock(trace_mu_);
    trace_full_ = true;
    return;
  }
  // O_APPEND: records of several processes never interleave within a write.
  (void)::write(fd->get(), pending.data(), pending.size());
}

}  // namespace ferry::cache
