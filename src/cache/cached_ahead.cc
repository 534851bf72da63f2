// CachedFile: the parts of the read path that know who is reading — read-ahead's own reads and
// fetches (file_ahead.h). See cache.h.
#include <algorithm>

#include "cache/cache.h"
#include "cache/held_or_coming.h"
#include "readahead/file_ahead.h"

namespace ferry::cache {
namespace {

// Set while a thread reads for the cache itself (read-ahead loading a file's trees): its misses
// are not the application waiting, and its reads teach the predictor nothing.
thread_local bool tls_untracked = false;

}  // namespace

bool CachedFile::UntrackedRead() {
  return tls_untracked;
}

Status CachedFile::ReadUntracked(std::span<io::ReadRequest> requests) {
  for (io::ReadRequest& r : requests) {
    if (r.offset > size_ || r.dest.size() > size_ - r.offset) {
      return InvalidArgumentError("read past the end of the file");
    }
    r.status = OkStatus();
  }
  struct Flag {
    Flag() { tls_untracked = true; }
    ~Flag() { tls_untracked = false; }
    Flag(const Flag&) = delete;
    Flag& operator=(const Flag&) = delete;
  } flag;
  if (replica_) {
    bool missed = false;
    return ReadVirtual(requests, &missed);
  }
  bool missed = false;
  return ReadOriginal(requests, &missed);
}

void CachedFile::Prefetch(std::span<const fetch::Range> ranges,
                          std::vector<fetch::Range>& fetched) {
  fetched.clear();
  if (pass_through() || closed_.load(std::memory_order_acquire)) {
    return;
  }
  const fetch::Planner& planner = cache_->planner();
  // A replica's overlay is held by definition: only the original region can be fetched.
  std::vector<fetch::Range> wanted;
  wanted.reserve(ranges.size());
  for (const fetch::Range& r : ranges) {
    const uint64_t end = std::min(r.end(), origin_size_);
    if (r.offset < end) {
      wanted.push_back({r.offset, end - r.offset});
    }
  }
  fetch::Normalize(wanted);
  if (wanted.empty()) {
    return;
  }
  (void)entry_->RefreshIfChanged();
  MutexLock planning(entry_->plan_mu());  // see FetchMissing
  std::vector<fetch::Range> inflight;
  entry_->InflightRanges(inflight);
  std::vector<fetch::Range> need;
  {
    ReaderLock lock(entry_->mu());
    planner.Missing(wanted, origin_size_, HeldOrComing(entry_->index(), inflight), need);
  }
  // Bytes on their way already (the application's misses, other prefetches) are left to them.
  std::vector<fetch::Range> own;
  std::vector<std::pair<fetch::Range, std::shared_ptr<Fetch>>> joined;
  std::shared_ptr<Fetch> mine;
  fetch::FetchPlan plan;
  entry_->ClaimInflight(need, {}, own, joined, [&] {
    planner.Pack(own, plan);
    mine = std::make_shared<Fetch>(plan.chunks);
    return mine;
  });
  planning.Unlock();
  if (!mine) {
    return;
  }
  std::vector<io::ReadRequest> pieces(plan.chunks.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    pieces[i].offset = plan.chunks[i].offset;
    pieces[i].dest = mine->ChunkBuffer(i);
  }
  ReadPieces(pieces, plan.reads, /*ahead=*/true);
  uint64_t ok = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    mine->SetStatus(i, pieces[i].status);
    if (pieces[i].status) {
      fetched.push_back(plan.chunks[i]);
      ok += plan.chunks[i].length;
    }
  }
  FinishFetch(*mine);
  cache_->counters().Add(Counter::kPrefetchBytes, ok);
  StoreOrRelease(mine);  // not stored: joiners got their copies; the application misses again
}

void CachedFile::CountAhead(uint64_t hits, uint64_t unused_bytes) {
  cache_->counters().Add(Counter::kPrefetchHits, hits);
  cache_->counters().Add(Counter::kPrefetchUnusedBytes, unused_bytes);
}

void CachedFile::WarmUp() {
  if (ahead_) {
    ahead_->WarmUp();
  }
}

}  // namespace ferry::cache
