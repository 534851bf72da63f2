// Entry maintenance: opening an entry without an origin, releasing byte-tier pages a replica
// superseded, and compacting the fragment log. See entry.h and docs/format/page-store.md.
//
// Both kinds of rewrite run only while no other process has the entry open (the open lock is
// made exclusive without waiting), because other processes read through their own copy of the
// index: a block punched under them would read as zeros. Their CRC checks would catch that, but
// they would count failures and fetch again for nothing. In this process, readers hold mu()
// shared while they read, so swapping the index under mu() exclusive is enough.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "cache/entry.h"
#include "cache/page_crc.h"

namespace ferry::cache {
namespace {

constexpr uint64_t kBlock = 4096;
// Garbage (dead data pages plus superseded fragments) is tolerated up to
// max(kMinGarbage, held bytes / kGarbageShare).
constexpr uint64_t kMinGarbage = 64 << 10;
constexpr uint64_t kGarbageShare = 33;  // ~3%
// The write-behind thread looks again only after the log grew this much; with the share
// above and the index (~0.15%), an entry of 8 MiB or more stays under 1.05x its bytes held.
constexpr uint64_t kCompactCheckEvery = 128 << 10;
constexpr size_t kCopyChunk = 4 << 20;

// A page whose block in the data file is live: full, or holding a fragment kept there too.
bool LiveInData(const PageIndex& index, uint64_t page) {
  if (index.full(page)) {
    return true;
  }
  const Fragment* f = index.fragment(page);
  return f != nullptr && f->in_data;
}

Status PunchHole(int fd, uint64_t offset, uint64_t length, const std::string& path) {
  if (length == 0) {
    return OkStatus();
  }
  if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(length))
      != 0) {
    if (errno == EOPNOTSUPP) {
      return OkStatus();  // the filesystem cannot free the blocks; nothing is wrong
    }
    return IoError("punch hole in " + path, errno);
  }
  return OkStatus();
}

uint64_t Allocated(int fd) {
  struct stat st = {};
  return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}

}  // namespace

Status Entry::OpenExisting() {
  MutexLock guard(open_mu_);
  if (open_done_) {
    return open_status_;
  }
  open_done_ = true;
  open_status_ = [&]() -> Status {
    FERRY_TRY(LockOpenByte());
    IndexStamp stamp;
    PageIndex loaded = FERRY_TRY(LoadIndex(paths_.idx(), &stamp));
    if (loaded.info().url != url_) {
      return CorruptionError("index " + paths_.idx() + " names another URL");
    }
    FERRY_TRY(AdoptIndex(std::move(loaded), stamp));
    data_fd_ = FERRY_TRY(Fd::Open(paths_.data(), O_RDWR));
    frag_fd_ = FERRY_TRY(Fd::Open(paths_.frag(), O_RDWR));
    return OkStatus();
  }();
  return open_status_;
}

bool Entry::WithSoleOpen(const std::function<void()>& fn) {
  if (!lock_.valid() || !lock_.Lock(kOpenLockByte, /*exclusive=*/true, 0)) {
    return false;
  }
  fn();
  // Back to shared: converting a lock this description holds never waits.
  (void)lock_.Lock(kOpenLockByte, /*exclusive=*/false, 0);
  return true;
}

Result<uint64_t> Entry::ReleaseRanges(std::span<const fetch::Range> ranges) {
  Status why;
  if (!TryLockForWrite(why)) {
    return std::move(why).error();
  }
  Result<uint64_t> released = ReleaseRangesLocked(ranges);
  UnlockForWrite();
  return released;
}

Result<uint64_t> Entry::ReleaseRangesLocked(std::span<const fetch::Range> ranges) {
  RefreshForWrite();
  if (failed()) {
    return Error(ErrorCode::kCancelled, "entry failed");
  }
  const uint64_t ps = page_size_;
  uint64_t released = 0;
  {
    WriterLock lock(mu_);
    for (const fetch::Range& r : ranges) {
      if (r.length == 0) {
        continue;
      }
      for (uint64_t page = r.offset / ps; page <= (r.end() - 1) / ps; ++page) {
        const uint64_t pstart = page * ps;
        const uint32_t plen = index_.PageLength(page);
        if (plen == 0) {
          break;
        }
        if (index_.full(page)) {
          if (pstart >= r.offset && pstart + plen <= r.end()) {
            index_.Drop(page);
            released += plen;
          }
        } else if (const Fragment* f = index_.fragment(page)) {
          if (pstart + f->lo >= r.offset && pstart + f->hi <= r.end()) {
            released += f->length();
            index_.Drop(page);
          }
        }
      }
    }
  }
  if (released > 0) {
    dirty_.store(true, std::memory_order_relaxed);
    std::vector<uint8_t> scratch;
    FERRY_TRY(MaybePublish(/*force=*/true, scratch));
  }
  // Only now, with an index that no longer names them, free the blocks: every whole page in
  // the ranges that is not full (also those a crash left allocated after an earlier release).
  for (const fetch::Range& r : ranges) {
    uint64_t a = (r.offset + ps - 1) / ps * ps;
    const uint64_t b = std::min(r.end(), size_) / ps * ps;
    while (a < b) {
      uint64_t page = a / ps;
      {
        ReaderLock lock(mu_);
        while (a < b && LiveInData(index_, page)) {
          a += ps;
          ++page;
        }
      }
      uint64_t stop = a;
      {
        ReaderLock lock(mu_);
        while (stop < b && !LiveInData(index_, stop / ps)) {
          stop += ps;
        }
      }
      FERRY_TRY(PunchHole(data_fd_.get(), a, stop - a, paths_.data()));
      a = stop;
    }
  }
  FERRY_TRY(CompactFragments(/*force=*/false));
  return released;
}

Result<uint64_t> Entry::ReleaseDeadPages() {
  // Pages written but never published (a process killed between its page writes and its
  // publish, or a replica release interrupted) are allocated blocks the index does not name.
  const uint64_t ps = page_size_;
  const uint64_t before = Allocated(data_fd_.get());
  off_t pos = 0;
  for (int guard = 0; guard < 1'000'000; ++guard) {
    const off_t data = ::lseek(data_fd_.get(), pos, SEEK_DATA);
    if (data < 0) {
      break;  // ENXIO: no data past pos
    }
    const off_t hole = ::lseek(data_fd_.get(), data, SEEK_HOLE);
    if (hole < 0) {
      break;
    }
    // Whole pages of [data, hole) that the index does not hold full, in runs.
    uint64_t a = (static_cast<uint64_t>(data) + ps - 1) / ps * ps;
    const uint64_t b = static_cast<uint64_t>(hole) / ps * ps;
    while (a < b) {
      uint64_t stop = a;
      {
        ReaderLock lock(mu_);
        while (a < b && LiveInData(index_, a / ps)) {
          a += ps;
        }
        stop = a;
        while (stop < b && !LiveInData(index_, stop / ps)) {
          stop += ps;
        }
      }
      if (a < stop) {
        FERRY_TRY(PunchHole(data_fd_.get(), a, stop - a, paths_.data()));
      }
      a = stop;
    }
    pos = hole;
  }
  const uint64_t after = Allocated(data_fd_.get());
  return before > after ? before - after : 0;
}

Result<uint64_t> Entry::CompactFragments(bool force) {
  RefreshForWrite();  // so that the publish below merges nothing
  if (failed()) {
    return Error(ErrorCode::kCancelled, "entry failed");
  }
  // A process killed inside a publish leaves its KEY.idx.tmp.PID behind; it counts against
  // the cap and nobody else would ever remove it.
  RemoveStaleTemps(paths_);
  // One budget for both kinds of garbage: dead data-file pages (written by processes killed
  // before they published) and superseded copies in the fragment log. Separate budgets would
  // let the two add up to twice the share, past the 1.05x an entry promises.
  uint64_t full_bytes = 0;
  uint64_t held = 0;
  uint64_t live_bytes = 0;
  {
    ReaderLock lock(mu_);
    full_bytes = index_.full_pages() * page_size_;
    held = index_.held_bytes();
    for (const auto& [page, f] : index_.fragments()) {
      if (f.in_data) {
        full_bytes += page_size_;  // a fragment in the data file holds its page's block there
      } else {
        live_bytes += f.length();
      }
    }
  }
  const uint64_t data_alloc = Allocated(data_fd_.get());
  const uint64_t frag_alloc = Allocated(frag_fd_.get());
  const uint64_t data_garbage = data_alloc > full_bytes ? data_alloc - full_bytes : 0;
  const uint64_t frag_garbage = frag_alloc > live_bytes ? frag_alloc - live_bytes : 0;
  if (!force && data_garbage + frag_garbage <= std::max(kMinGarbage, held / kGarbageShare)) {
    return 0;
  }
  uint64_t freed = 0;
  if (force || data_garbage > 0) {
    freed += FERRY_TRY(ReleaseDeadPages());
  }
  // Rewriting the log copies only its live bytes, so it is cheap enough to do whenever the
  // budget is passed, even when most of the garbage was in the data file.
  if (force || frag_garbage > kBlock) {
    freed += FERRY_TRY(RewriteFragmentLog());
  }
  return freed;
}

// A fragment's bytes as they are in the log check out. An encrypted fragment is opened in a copy:
// the log keeps the sealed bytes (its place in the log is not bound, so they move as they are).
bool Entry::HeldIntact(uint64_t page, const Fragment& f, std::span<const uint8_t> bytes) const {
  thread_local std::vector<uint8_t> copy;
  copy.assign(bytes.begin(), bytes.end());
  return CheckFragmentBytes(sealer_.get(), page, f, copy);
}

Result<uint64_t> Entry::RewriteFragmentLog() {
  const uint64_t before = Allocated(frag_fd_.get());
  std::vector<std::pair<uint64_t, Fragment>> live;
  {
    ReaderLock lock(mu_);
    for (const auto& [page, f] : index_.fragments()) {
      if (!f.in_data) {  // those are in the data file
        live.emplace_back(page, f);
      }
    }
  }
  std::sort(live.begin(), live.end(),
            [](const auto& a, const auto& b) { return a.second.offset < b.second.offset; });
  // The live bytes go after everything now in the log, block-aligned, so that all blocks before
  // them can be freed once an index naming the new places is published.
  const uint64_t start = (frag_end_ + kBlock - 1) / kBlock * kBlock;
  uint64_t pos = start;
  std::vector<uint8_t> buf;
  std::vector<uint64_t> bad;
  for (size_t i = 0; i < live.size();) {
    buf.clear();
    const uint64_t chunk_at = pos;
    for (; i < live.size() && buf.size() < kCopyChunk; ++i) {
      Fragment& f = live[i].second;
      const size_t at = buf.size();
      buf.resize(at + f.length());
      if (!PreadFull(frag_fd_.get(), buf.data() + at, f.length(), f.offset)
          || !HeldIntact(live[i].first, f, {buf.data() + at, f.length()})) {
        buf.resize(at);  // a damaged fragment is dropped, not carried over
        bad.push_back(live[i].first);
        continue;
      }
      f.offset = pos;
      pos += f.length();
    }
    FERRY_TRY(PwriteFull(frag_fd_.get(), buf.data(), buf.size(), chunk_at));
  }
  if (config_.sync && ::fdatasync(frag_fd_.get()) != 0) {
    return IoError("fdatasync of " + paths_.frag(), errno);
  }
  {
    WriterLock lock(mu_);
    for (uint64_t page : bad) {
      index_.Drop(page);
    }
    for (const auto& [page, f] : live) {
      if (std::find(bad.begin(), bad.end(), page) == bad.end()) {
        index_.SetFragment(page, f);
      }
    }
    frag_end_ = pos;
    index_.mutable_info().frag_bytes = pos;
  }
  if (!bad.empty()) {
    counters_.Add(Counter::kCrcFailures, bad.size());
  }
  dirty_.store(true, std::memory_order_relaxed);
  std::vector<uint8_t> scratch;
  FERRY_TRY(MaybePublish(/*force=*/true, scratch));
  FERRY_TRY(PunchHole(frag_fd_.get(), 0, start, paths_.frag()));
  compact_checked_end_ = frag_end_;
  const uint64_t after = Allocated(frag_fd_.get());
  return before > after ? before - after : 0;
}

void Entry::MaybeCompact() {
  if (failed() || !frag_fd_.valid() || frag_end_ < compact_checked_end_ + kCompactCheckEvery) {
    return;
  }
  compact_checked_end_ = frag_end_;
  Status st = OkStatus();
  WithSoleOpen([&]() FERRY_REQUIRES(write_mu_) {
    auto freed = CompactFragments(/*force=*/false);
    if (!freed) {
      st = std::move(freed).error();
    }
  });
  if (!st) {
    Fail(st.error());
  }
}

}  // namespace ferry::cache
