// CachedFile: the read path (hits, misses, joins, retries, fail-open). See cache.h.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <random>
#include <thread>

#include "base/log.h"
#include "cache/cache.h"
#include "cache/held_or_coming.h"
#include "readahead/bulk_detect.h"
#include "readahead/file_ahead.h"
#include "readahead/link_meter.h"
#include "readahead/prefetcher.h"

namespace ferry::cache {
namespace {

// Reused by every read of a thread, so that hits allocate nothing once warm.
struct ReadScratch {
  ServeScratch serve;
  std::vector<Piece> missing;
};
thread_local ReadScratch tls_scratch;

std::chrono::milliseconds Backoff(uint32_t base_ms, uint32_t attempt) {
  thread_local std::minstd_rand rng(static_cast<unsigned>(
      std::hash<std::thread::id>{}(std::this_thread::get_id()) ^ static_cast<size_t>(NowNs())));
  const double exp =
      static_cast<double>(base_ms) * static_cast<double>(1u << std::min(attempt, 10u));
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  const double ms = std::min(2000.0, exp * jitter(rng));
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

// Adds [a, b) to `ranges` (disjoint, merged: start -> end). True when it holds bytes that
// `ranges` did not; a range already held allocates nothing.
bool AddRange(std::map<uint64_t, uint64_t>& ranges, uint64_t a, uint64_t b) {
  auto it = ranges.upper_bound(a);
  if (it != ranges.begin()) {
    auto before = std::prev(it);
    if (before->second >= b) {
      return false;
    }
    if (before->second >= a) {
      a = before->first;
      it = before;
    }
  }
  while (it != ranges.end() && it->first <= b) {
    b = std::max(b, it->second);
    it = ranges.erase(it);
  }
  ranges.emplace(a, b);
  return true;
}

// Groups consecutive pieces into vector reads within the planner's limits.
void GroupPieces(std::span<const io::ReadRequest> pieces,
                 const fetch::PlannerConfig& limits,
                 std::vector<fetch::VectorRead>& out) {
  out.clear();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const uint64_t len = pieces[i].dest.size();
    if (out.empty() || out.back().count >= limits.max_chunks
        || out.back().bytes + len > limits.max_request_bytes) {
      out.push_back({i, 0, 0});
    }
    out.back().count += 1;
    out.back().bytes += len;
  }
}

}  // namespace

CachedFile::CachedFile(std::shared_ptr<Cache> cache,
                       std::shared_ptr<Entry> entry,
                       std::shared_ptr<Origin> origin,
                       uint64_t size,
                       int64_t mtime,
                       std::shared_ptr<const VirtualFile> replica)
    : cache_(std::move(cache)),
      entry_(std::move(entry)),
      origin_(std::move(origin)),
      size_(replica ? replica->size() : size),
      origin_size_(size),
      mtime_(mtime),
      replica_(std::move(replica)),
      channels_(origin_->channels(), /*others_usable=*/false) {}

uint64_t CachedFile::replica_generation() const {
  return replica_ ? replica_->generation() : 0;
}

CachedFile::~CachedFile() {
  Close();
}

void CachedFile::Close() {
  if (closed_.exchange(true)) {
    return;
  }
  if (ahead_) {
    ahead_->Stop();  // its fetches use this handle
  }
  if (entry_) {
    entry_->TouchLastRead();
    // The last handle publishes what is stored but unpublished (queued fetches are published
    // by the writer within publish_ms anyway); a pass that only hit wakes nobody.
    if (entry_->RemoveHandle() == 0
        && (entry_->dirty() || entry_->trace_pending() || entry_->replica_wish())) {
      cache_->writer().RequestPublish(entry_);
    }
    // Dropping our reference lets the entry (and its open lock) go once the writer is done.
    entry_.reset();
  }
  (void)cache_->MergeStats();
}

Status CachedFile::Read(uint64_t offset, std::span<uint8_t> dest) {
  io::ReadRequest r{offset, dest, {}};
  return ReadV({&r, 1});
}

bool CachedFile::Traced(std::span<const io::ReadRequest> requests, bool missed) {
  if (!entry_) {
    return false;  // read through: no entry, no trace
  }
  if (missed || !entry_->has_trace()) {
    traced_.store(true, std::memory_order_relaxed);
  } else if (!traced_.load(std::memory_order_relaxed)) {
    return false;
  }
  bool fresh = false;
  MutexLock lock(read_mu_);
  for (const io::ReadRequest& r : requests) {
    if (!r.dest.empty()) {
      fresh = AddRange(read_, r.offset, r.offset + r.dest.size()) || fresh;
    }
  }
  return missed || fresh;
}

uint32_t CachedFile::page_size() const {
  return pass_through() ? 0 : entry_->page_size();
}

void CachedFile::StoredPageCrcs(uint64_t first_page, std::span<std::optional<uint32_t>> out) const {
  std::fill(out.begin(), out.end(), std::nullopt);
  // An encrypted page's CRC is not kept (its tag authenticates it): the caller computes it.
  if (pass_through() || entry_->sealer() != nullptr) {
    return;
  }
  ReaderLock lock(entry_->mu());
  const PageIndex& index = entry_->index();
  for (size_t i = 0; i < out.size(); ++i) {
    if (index.full(first_page + i)) {
      out[i] = index.crc(first_page + i);
    }
  }
}

bool CachedFile::AllHeld(std::span<const io::ReadRequest> requests) {
  if (pass_through()) {
    return false;
  }
  ReaderLock lock(entry_->mu());
  for (const io::ReadRequest& r : requests) {
    // The overlay of a replica is held by definition; only the original region can miss.
    const uint64_t end = std::min<uint64_t>(r.offset + r.dest.size(), origin_size_);
    if (r.offset >= end) {
      continue;
    }
    const fetch::Range range{r.offset, end - r.offset};
    if (!cache_->planner().AllHeld({&range, 1}, origin_size_, entry_->index())) {
      return false;
    }
  }
  return true;
}

Status CachedFile::ReadV(std::span<io::ReadRequest> requests) {
  for (io::ReadRequest& r : requests) {
    if (r.offset > size_ || r.dest.size() > size_ - r.offset) {
      return InvalidArgumentError("read past the end of the file");
    }
    r.status = OkStatus();
  }
  if (bulk_ && !bypass_.load(std::memory_order_relaxed) && bulk_->Note(requests)) {
    bypass_.store(true, std::memory_order_relaxed);  // a copy: from this read on, uncached
  }
  if (bypass_.load(std::memory_order_relaxed)) {
    if (!replica_) {
      return ReadBypassed(requests);
    }
    // A copy of a virtual file: its layout is the replica's, whose bytes past origin_size()
    // the origin does not have and whose original region carries patches. ReadOriginal passes
    // the original region through uncached; the rest is the replica's as usual.
    bool missed = false;
    return ReadVirtual(requests, &missed);
  }
  if (entry_) {
    cache_->NoteRead(*entry_);
  } else {
    cache_->NoteActivity();
  }
  // Predictions first, so they go out while this read is served.
  const bool filling = ahead_ && ahead_->BeforeRead(requests);
  bool missed = false;
  Status st;
  if (replica_) {
    st = ReadVirtual(requests, &missed);
  } else {
    st = ReadOriginal(requests, &missed);
    // The fill pass's reads make the access trace (the replica's layout): those read-ahead
    // follows count too, or a file read-ahead fetched whole would leave no trace at all; and
    // so do its first reads of bytes that a miss fetched beside what it asked for (Traced).
    if ((Traced(requests, missed) || filling) && entry_) {
      entry_->RecordAccess(0, requests);
    }
  }
  if (ahead_) {
    ahead_->AfterRead(requests, missed);
  }
  return st;
}

Status CachedFile::ReadVirtual(std::span<io::ReadRequest> requests, bool* missed) {
  *missed = false;
  replica_->Read(requests, *this, cache_->counters(), missed);
  if (entry_ && !UntrackedRead() && Traced(requests, *missed)) {
    entry_->RecordAccess(replica_->generation(), requests);
  }
  for (const io::ReadRequest& r : requests) {
    if (!r.status) {
      return r.status;
    }
  }
  return OkStatus();
}

int CachedFile::ZeroCopyFd(uint64_t offset, uint64_t length) {
  if (pass_through() || replica_ || bypass_.load(std::memory_order_relaxed)
      || closed_.load(std::memory_order_relaxed) || offset + length > origin_size_) {
    return -1;
  }
  // A recreated entry (another process truncated the files) fails here, at most 20 ms late.
  entry_->RefreshIfChanged();
  return entry_->VerifiedDataFd(offset, length);
}

uint64_t CachedFile::held_bytes() {
  if (pass_through()) {
    return 0;
  }
  ReaderLock lock(entry_->mu());
  return entry_->index().held_bytes();
}

void CachedFile::CountZeroCopy(uint64_t bytes) {
  Counters& counters = cache_->counters();
  counters.Add(Counter::kHits);
  counters.Add(Counter::kBytesFromCache, bytes);
  handle_.bytes_from_cache.fetch_add(bytes, std::memory_order_relaxed);
  cache_->NoteRead(*entry_);
}

void CachedFile::FollowZeroCopy(uint64_t offset, uint64_t length) {
  // A file held whole has nothing to read ahead, and read-ahead learns nothing from a handle
  // that never missed: a warm pass then pays one atomic load per read for this, not read-ahead's
  // lock and its fetch tasks that find everything held (~15% of a warm pass's CPU).
  if (!ahead_ || whole_.load(std::memory_order_relaxed)) {
    return;
  }
  if (held_bytes() >= origin_size_) {
    whole_.store(true, std::memory_order_relaxed);
    return;
  }
  const fetch::Range sent{offset, length};
  ahead_->Served({&sent, 1});
}

Status CachedFile::ReadOriginal(std::span<io::ReadRequest> requests, bool* missed_out) {
  if (zero_copy_ && !pass_through()) {
    // Pages this process verified are read back unchecked (entry_serve.cc): a recreation of the
    // entry by another process is noticed here within 20 ms, as ZeroCopyFd notices it.
    entry_->RefreshIfChanged();
  }
  if (pass_through()) {
    return ReadDirect(requests);
  }
  if (bypass_.load(std::memory_order_relaxed)) {
    return ReadBypassed(requests);  // a virtual file's copy (ReadV): its original region
  }
  Counters& counters = cache_->counters();
  ReadScratch& ts = tls_scratch;
  ts.missing.clear();
  ts.serve.bad.clear();
  uint64_t served = 0;
  {
    ReaderLock lock(entry_->mu());
    for (size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].dest.empty()) {
        continue;
      }
      auto got = entry_->Serve(i, requests[i].offset, requests[i].dest, ts.serve, ts.missing);
      if (!got) {
        lock.Unlock();
        entry_->Fail(got.error());
        return ReadDirect(requests);
      }
      served += *got;
    }
  }
  entry_->DropPages(ts.serve.bad);
  ts.serve.bad.clear();
  counters.Add(Counter::kBytesFromCache, served);
  if (!UntrackedRead()) {  // the cache's own reads (tree loads) are not the reader's hits
    handle_.bytes_from_cache.fetch_add(served, std::memory_order_relaxed);
  }
  size_t nonempty = 0;
  for (const io::ReadRequest& r : requests) {
    nonempty += r.dest.empty() ? 0u : 1u;
  }
  if (ts.missing.empty()) {
    counters.Add(Counter::kHits, nonempty);
    return OkStatus();
  }
  size_t missed = 0;
  for (size_t i = 0; i < ts.missing.size(); ++i) {
    if (i == 0 || ts.missing[i].request != ts.missing[i - 1].request) {
      ++missed;
    }
  }
  counters.Add(Counter::kMisses, missed);
  counters.Add(Counter::kHits, nonempty - missed);
  *missed_out = true;
  return FetchMissing(requests, ts.missing);  // copies: the thread's scratch is reused below
}

void CachedFile::ServeAgain(std::span<io::ReadRequest> requests, std::vector<Piece>& todo) {
  std::vector<Piece> still;
  ServeScratch scratch;
  uint64_t served = 0;
  {
    ReaderLock lock(entry_->mu());
    for (const Piece& p : todo) {
      std::span<uint8_t> dest =
          requests[p.request].dest.subspan(p.offset - requests[p.request].offset, p.length);
      auto got = entry_->Serve(p.request, p.offset, dest, scratch, still);
      if (!got) {
        still.push_back(p);
        continue;
      }
      served += *got;
    }
  }
  entry_->DropPages(scratch.bad);
  cache_->counters().Add(Counter::kBytesFromCache, served);
  if (!UntrackedRead()) {  // the cache's own reads (tree loads) are not the reader's hits
    handle_.bytes_from_cache.fetch_add(served, std::memory_order_relaxed);
  }
  todo.swap(still);
}

Status CachedFile::FetchMissing(std::span<io::ReadRequest> requests, std::vector<Piece> todo) {
  if (log::Enabled(log::Level::kDebug)) {
    for (const Piece& p : todo) {
      log::Printf(log::Level::kDebug, "cache", "miss %s %llu+%llu", entry_->url().c_str(),
                  static_cast<unsigned long long>(p.offset),
                  static_cast<unsigned long long>(p.length));
    }
  }
  // Another process may have published some of it since we loaded the index.
  if (entry_->RefreshIfChanged()) {
    ServeAgain(requests, todo);
    if (todo.empty()) {
      return OkStatus();
    }
  }
  // What neither our fetch nor a joined one delivered (`left`) was held when planned or landed
  // since: served from the cache. Bytes a fetch brought that the writer did not store (it
  // failed open: no room in its queue) go round the miss path once more, as our own fetch,
  // so that they are stored; read directly they would stay unheld until a pass read them
  // again (and a replica built meanwhile would miss them). A second round's leftovers (the
  // writer refused again) are read directly: the reader is not kept waiting on a full queue.
  for (int round = 0; !todo.empty(); ++round) {
    MissFetches fetches = PlanMissFetches(todo);
    if (fetches.mine) {
      RunOwnFetch(*fetches.mine, fetches.plan);
    }
    std::vector<Piece> left;
    for (const Piece& p : todo) {
      DeliverPiece(requests[p.request], p, fetches, left);
    }
    if (!left.empty()) {
      ServeAgain(requests, left);
    }
    if (fetches.mine) {
      StoreOrRelease(fetches.mine);
    }
    if (!left.empty() && (round > 0 || entry_->failed())) {
      ReadPiecesDirect(requests, left);
      break;
    }
    todo = std::move(left);
  }
  for (const io::ReadRequest& r : requests) {
    if (!r.status) {
      return r.status;
    }
  }
  return OkStatus();
}

CachedFile::MissFetches CachedFile::PlanMissFetches(std::span<const Piece> todo) {
  const fetch::Planner& planner = cache_->planner();
  std::vector<fetch::Range> wanted;
  wanted.reserve(todo.size());
  for (const Piece& p : todo) {
    wanted.push_back({p.offset, p.length});
  }
  fetch::Normalize(wanted);
  // Planning and claiming are one step per entry: a fetch planned at the same time as another
  // (the application's and read-ahead's) could otherwise leave two intervals in one partial
  // page, of which the store keeps one.
  MutexLock planning(entry_->plan_mu());
  std::vector<fetch::Range> inflight;
  entry_->InflightRanges(inflight);
  std::vector<fetch::Range> need;
  {
    ReaderLock lock(entry_->mu());
    planner.Missing(wanted, origin_size_, HeldOrComing(entry_->index(), inflight), need);
  }
  // Wanted bytes that were on their way are left out of `need` and only joined, while their
  // fetch is in flight. One that lands before the claim below is in the index by then (the
  // writer stores a fetch before it releases it) and is served from there (`left` in
  // FetchMissing); one the writer did not store is fetched by the next round. Claiming
  // them, as all of `wanted` once was, read again bytes the cache held whenever a fetch landed
  // while a miss was planned.
  std::vector<fetch::Range> coming;
  if (!inflight.empty()) {
    std::vector<fetch::Range> merged = inflight;  // in-flight ranges may touch
    fetch::Normalize(merged);
    std::vector<fetch::Range> rest;
    std::vector<fetch::Range> overlap;
    fetch::Subtract(wanted, merged, rest, &overlap);
    fetch::Subtract(overlap, need, coming);
  }
  MissFetches f;
  std::vector<fetch::Range> own;
  entry_->ClaimInflight(need, coming, own, f.joined, [&] {
    planner.Pack(own, f.plan);
    f.mine = std::make_shared<Fetch>(f.plan.chunks);
    return f.mine;
  });
  if (!f.joined.empty()) {
    cache_->counters().Add(Counter::kJoinedFetches);
  }
  return f;
}

void CachedFile::RunOwnFetch(Fetch& mine, const fetch::FetchPlan& plan) {
  std::vector<io::ReadRequest> pieces(plan.chunks.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    pieces[i].offset = plan.chunks[i].offset;
    pieces[i].dest = mine.ChunkBuffer(i);
  }
  // The application waits on this fetch: a host whose readahead_fetches_app_waits is below
  // readahead_fetches has read-ahead start fewer fetches until it is answered (neither host's
  // default is: cache/config.h).
  readahead::Prefetcher* ahead = UntrackedRead() ? nullptr : cache_->prefetcher();
  if (ahead != nullptr) {
    ahead->AppFetchBegin();
    if (ahead_) {
      ahead_->OwnFetchStarts();  // a first data read's window, held so as not to go out first
    }
  }
  ReadPieces(pieces, plan.reads);
  if (ahead != nullptr) {
    ahead->AppFetchEnd();
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    mine.SetStatus(i, pieces[i].status);
  }
  FinishFetch(mine);
}

void CachedFile::FinishFetch(Fetch& fetch) {
  if (fetch.ok_bytes() == 0) {
    entry_->ReleaseInflight(&fetch);
  }
  fetch.Finish();
}

void CachedFile::StoreOrRelease(const std::shared_ptr<Fetch>& fetch) {
  if (fetch->ok_bytes() == 0 || entry_->failed() || !cache_->writer().Submit(entry_, fetch)) {
    entry_->ReleaseInflight(fetch.get());
  }
}

// Copies piece p from our fetch or from the fetches we joined into req; what neither holds
// goes to `left`. A failure of our own fetch (after its retries) is the origin's answer.
void CachedFile::DeliverPiece(io::ReadRequest& req,
                              const Piece& p,
                              const MissFetches& fetches,
                              std::vector<Piece>& left) {
  uint64_t pos = p.offset;
  const uint64_t end = p.offset + p.length;
  while (pos < end) {
    std::span<uint8_t> dest = req.dest.subspan(pos - req.offset, end - pos);
    size_t n = 0;
    if (fetches.mine) {
      n = fetches.mine->CopyPrefix(pos, dest);
      const long at = n == 0 ? fetches.mine->ChunkAt(pos) : -1;
      if (at >= 0 && fetches.mine->error(static_cast<size_t>(at)) != nullptr) {
        if (req.status) {
          req.status = *fetches.mine->error(static_cast<size_t>(at));
        }
        return;
      }
    }
    if (n == 0) {
      for (const auto& [range, fetch] : fetches.joined) {
        if (range.offset <= pos && pos < range.end()) {
          fetch->Wait();
          n = fetch->CopyPrefix(pos,
                                dest.first(std::min<uint64_t>(dest.size(), range.end() - pos)));
          break;
        }
      }
    }
    if (n == 0) {
      left.push_back({p.request, pos, end - pos});
      return;
    }
    pos += n;
  }
}

void CachedFile::ReadPieces(std::span<io::ReadRequest> pieces,
                            std::span<const fetch::VectorRead> groups,
                            bool ahead) {
  if (pieces.empty()) {
    return;  // nothing to ask: do not make a lazily opened origin open
  }
  Counters& counters = cache_->counters();
  const Config& config = cache_->config();
  std::vector<OriginRead> reads(groups.size());
  std::vector<io::ReadRequest> retry;
  std::vector<size_t> retry_index;
  std::vector<fetch::VectorRead> retry_groups;
  for (uint32_t attempt = 0;; ++attempt) {
    std::span<io::ReadRequest> batch = attempt == 0 ? pieces : std::span(retry);
    std::span<const fetch::VectorRead> batch_groups =
        attempt == 0 ? groups : std::span<const fetch::VectorRead>(retry_groups);
    reads.resize(batch_groups.size());
    if (channels_.size() > 1 && (ahead || batch_groups.size() > 1 || channels_.in_flight(0) > 0)) {
      origin_->PrepareChannels();  // concurrent requests: spread them once channels are up
    }
    for (size_t c = 1; c < channels_.size(); ++c) {
      channels_.SetUsable(c, origin_->channel_ready(c));
    }
    for (size_t g = 0; g < batch_groups.size(); ++g) {
      // Read-ahead stays off channel 0, so the application's own requests never queue behind
      // it at the server (which serves one connection's requests one after another).
      reads[g].channel = channels_.Acquire(ahead ? 1 : 0);
      reads[g].ranges = batch.subspan(batch_groups[g].first, batch_groups[g].count);
    }
    const int64_t started = meter_ != nullptr ? meter_->Begin() : 0;
    origin_->Read(reads);
    for (const OriginRead& r : reads) {
      channels_.Release(r.channel);
    }
    counters.Add(Counter::kOriginRequests, batch_groups.size());
    handle_.origin_requests.fetch_add(batch_groups.size(), std::memory_order_relaxed);
    counters.Add(Counter::kOriginChunks, batch.size());
    if (attempt > 0) {
      counters.Add(Counter::kRetries, batch_groups.size());
      for (size_t i = 0; i < retry.size(); ++i) {
        pieces[retry_index[i]].status = retry[i].status;
      }
    }
    uint64_t got = 0;
    for (const io::ReadRequest& r : batch) {
      got += r.status ? r.dest.size() : 0;
    }
    if (meter_ != nullptr) {
      meter_->End(started, got);
    }
    counters.Add(Counter::kBytesFromOrigin, got);
    cache_->NoteFilling();
    handle_.bytes_from_origin.fetch_add(got, std::memory_order_relaxed);
    if (ahead) {
      handle_.prefetch_bytes.fetch_add(got, std::memory_order_relaxed);
      handle_.prefetch_requests.fetch_add(batch_groups.size(), std::memory_order_relaxed);
    }
    // Retry only the pieces that failed with a transient error.
    retry.clear();
    retry_index.clear();
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (!pieces[i].status && IsTransient(pieces[i].status.error())) {
        retry.push_back({pieces[i].offset, pieces[i].dest, {}});
        retry_index.push_back(i);
      }
    }
    if (retry.empty() || attempt >= config.retries) {
      return;
    }
    GroupPieces(retry, config.planner(), retry_groups);
    std::this_thread::sleep_for(Backoff(config.backoff_ms, attempt));
  }
}

void CachedFile::ReadPiecesDirect(std::span<io::ReadRequest> requests,
                                  std::span<const Piece> pieces) {
  const Config& config = cache_->config();
  std::vector<io::ReadRequest> parts;
  std::vector<size_t> owner;
  for (const Piece& p : pieces) {
    io::ReadRequest& req = requests[p.request];
    for (uint64_t pos = p.offset; pos < p.offset + p.length;) {
      const uint64_t len = std::min<uint64_t>(config.max_chunk_bytes, p.offset + p.length - pos);
      parts.push_back({pos, req.dest.subspan(pos - req.offset, len), {}});
      owner.push_back(p.request);
      pos += len;
    }
  }
  std::vector<fetch::VectorRead> groups;
  GroupPieces(parts, config.planner(), groups);
  ReadPieces(parts, groups);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].status && requests[owner[i]].status) {
      requests[owner[i]].status = parts[i].status;
    }
  }
}

Status CachedFile::ReadDirect(std::span<io::ReadRequest> requests) {
  std::vector<Piece> all;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].dest.empty()) {
      all.push_back({i, requests[i].offset, requests[i].dest.size()});
    }
  }
  ReadPiecesDirect(requests, all);
  for (const io::ReadRequest& r : requests) {
    if (!r.status) {
      return r.status;
    }
  }
  return OkStatus();
}

Status CachedFile::ReadBypassed(std::span<io::ReadRequest> requests) {
  uint64_t bytes = 0;
  for (const io::ReadRequest& r : requests) {
    bytes += r.dest.size();
  }
  Status st = ReadDirect(requests);
  cache_->counters().Add(Counter::kBypassedBytes, bytes);
  return st;
}

}  // namespace ferry::cache
