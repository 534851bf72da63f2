#include "plugin/proxy/copy_through.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "base/log.h"
#include "base/mutex.h"
#include "readahead/file_ahead.h"

namespace ferry::proxy {
namespace {

// A vector read's limits (XRootD's readv_ior_max and readv_iov_max defaults, the cache's
// max_request): what the proxy's own misses use too (cache/config.h).
constexpr uint64_t kMaxVectorChunk = 2097136;
constexpr size_t kMaxVectorChunks = 1024;
constexpr uint64_t kMaxVectorBytes = 16ull << 20;

}  // namespace

struct CopyStream::State {
  struct Block {
    enum class Phase { kQueued, kFetching, kDone };
    Phase phase = Phase::kQueued;
    std::unique_ptr<uint8_t[]> data;
    uint64_t length = 0;
    uint64_t consumed = 0;
    bool retired = false;  // read whole, kept for pages read again (`retired` below)
    Status status;
  };
  // The bytes of one request inside one block: read from the block, or straight from the
  // origin into the request's buffer.
  struct Piece {
    size_t request = 0;
    io::ReadRequest read;
  };
  struct ReadPlan {
    std::vector<Piece> memory;    // from blocks held, coming or claimed
    std::vector<Piece> direct;    // straight from the origin
    std::vector<uint64_t> mine;   // blocks this read fetches itself
    std::vector<uint64_t> ahead;  // blocks queued for the runner
    uint64_t furthest = 0;        // the end of the furthest piece from memory
  };

  State(std::shared_ptr<cache::Origin> o, uint64_t s, Runner r, CopyBudget* b)
      : size(s),
        runner(std::move(r)),
        budget(b),
        origin(std::move(o)),
        passed((s + kBlock - 1) / kBlock) {}

  uint64_t BlockLength(uint64_t b) const { return std::min(kBlock, size - b * kBlock); }
  // Fetches blocks `mine` (claimed: kFetching) with one origin call, then marks them done.
  void Fetch(const std::vector<uint64_t>& mine);
  // The ahead task of block b: fetches it unless a reader claimed it or the stream stopped.
  void RunAhead(uint64_t b);
  // Charges block b's bytes to the budget (always granted without one).
  bool Charge(uint64_t b) FERRY_REQUIRES(mu);
  // Whether block b fits in this stream's fair share of the budget (copy_budget.h).
  bool WithinShare(uint64_t b) const FERRY_REQUIRES(mu);
  // Drops a block and gives its bytes back to the budget.
  void Erase(std::map<uint64_t, Block>::iterator it) FERRY_REQUIRES(mu);
  // Splits `requests` into pieces of one block each (ReadPlan).
  void Split(std::span<io::ReadRequest> requests, ReadPlan& plan) FERRY_REQUIRES(mu);
  // True when block b's bytes come from memory: it is held or coming, or it is new and the
  // budget allows it (claimed into `mine`). Otherwise (read whole and dropped, or refused by
  // the budget) they are read straight from the origin.
  bool Claim(uint64_t b, std::vector<uint64_t>& mine) FERRY_REQUIRES(mu);
  // Queues blocks up to kWindow beyond `furthest` into `ahead`, within the stream's share.
  void PlanAhead(uint64_t furthest, std::vector<uint64_t>& ahead) FERRY_REQUIRES(mu);
  // Reads the pieces `direct` straight from the origin; their failures fail their requests.
  void ReadDirect(std::span<io::ReadRequest> requests, std::vector<Piece>& direct);
  // The origin reads of `ranges` (those that fit a vector read's chunk first): vector reads of
  // at most kMaxVectorChunks chunks and kMaxVectorBytes, and a plain read for each larger range.
  static void GroupDirect(std::span<io::ReadRequest> ranges, std::vector<cache::OriginRead>& reads);
  // Copies a piece's bytes out of its block once it is done; retires a block read whole.
  void Deliver(std::span<io::ReadRequest> requests, const Piece& p) FERRY_REQUIRES(mu);
  // Keeps block `it`, read whole, for pages read again, while there are at most kKeepRead of
  // them and the stream stays within its share; drops the oldest ones beyond.
  void Retire(std::map<uint64_t, Block>::iterator it) FERRY_REQUIRES(mu);

  const uint64_t size;
  const Runner runner;
  CopyBudget* const budget;  // null: no budget (tests)
  Mutex mu;
  CondVar cv;
  std::shared_ptr<cache::Origin> origin FERRY_GUARDED_BY(mu);  // null once stopped
  std::map<uint64_t, Block> blocks FERRY_GUARDED_BY(mu);
  // Blocks not fetched (again) as blocks: read whole, or refused by the budget when a read
  // needed them. Their bytes are read straight from the origin.
  std::vector<bool> passed FERRY_GUARDED_BY(mu);
  // Blocks read whole, oldest first, kept while there are at most kKeepRead of them: XrdCl
  // reads a page of a pgread again when its checksum does not match, soon after the first
  // read, and each such page from the origin would cost a round trip.
  std::deque<uint64_t> retired FERRY_GUARDED_BY(mu);
  uint64_t charged FERRY_GUARDED_BY(mu) = 0;  // bytes of `blocks`, charged to the budget
  bool joined FERRY_GUARDED_BY(mu) = false;   // counted among the budget's streams
  bool stopping FERRY_GUARDED_BY(mu) = false;
  uint32_t running FERRY_GUARDED_BY(mu) = 0;  // fetches using the origin now
  std::atomic<uint64_t> origin_bytes{0};
  std::atomic<uint64_t> origin_requests{0};
};

void CopyStream::State::Fetch(const std::vector<uint64_t>& mine) {
  std::shared_ptr<cache::Origin> o;
  std::vector<std::unique_ptr<uint8_t[]>> buffers(mine.size());
  std::vector<io::ReadRequest> ranges(mine.size());
  {
    MutexLock lock(mu);
    o = origin;
    ++running;
  }
  if (o) {
    std::vector<cache::OriginRead> reads;
    reads.reserve(ranges.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      const uint64_t n = BlockLength(mine[i]);
      buffers[i] = std::make_unique<uint8_t[]>(n);
      ranges[i] = {mine[i] * kBlock, {buffers[i].get(), n}, {}};
    }
    // One plain read per block (a vector read's chunks are limited to 2 MiB - 16 bytes), all
    // at once.
    for (io::ReadRequest& range : ranges) {
      reads.push_back({0, {&range, 1}});
    }
    o->Read(reads);
    o.reset();
  }
  MutexLock lock(mu);
  --running;
  for (size_t i = 0; i < mine.size(); ++i) {
    auto it = blocks.find(mine[i]);
    if (it == blocks.end()) {
      continue;  // the stream stopped and dropped it
    }
    State::Block& blk = it->second;
    blk.phase = Block::Phase::kDone;
    blk.length = BlockLength(mine[i]);
    blk.status = buffers[i] ? ranges[i].status : IoError("copy stream stopped", ECANCELED);
    if (blk.status) {
      blk.data = std::move(buffers[i]);
      origin_bytes.fetch_add(blk.length, std::memory_order_relaxed);
    }
  }
  origin_requests.fetch_add(mine.size(), std::memory_order_relaxed);
  cv.NotifyAll();
}

void CopyStream::State::RunAhead(uint64_t b) {
  {
    MutexLock lock(mu);
    auto it = blocks.find(b);
    if (stopping || it == blocks.end() || it->second.phase != Block::Phase::kQueued) {
      return;
    }
    it->second.phase = Block::Phase::kFetching;
  }
  Fetch({b});
}

bool CopyStream::State::Charge(uint64_t b) {
  const uint64_t n = BlockLength(b);
  if (budget != nullptr && !budget->TryTake(n)) {
    return false;
  }
  charged += n;
  return true;
}

bool CopyStream::State::WithinShare(uint64_t b) const {
  return budget == nullptr || charged + BlockLength(b) <= budget->share();
}

void CopyStream::State::Erase(std::map<uint64_t, Block>::iterator it) {
  const uint64_t n = BlockLength(it->first);
  if (budget != nullptr) {
    budget->Release(n);
  }
  charged -= n;
  blocks.erase(it);
}

void CopyStream::State::Split(std::span<io::ReadRequest> requests, ReadPlan& plan) {
  for (size_t i = 0; i < requests.size(); ++i) {
    io::ReadRequest& r = requests[i];
    const uint64_t end = r.offset + r.dest.size();
    for (uint64_t pos = r.offset; pos < end;) {
      const uint64_t b = pos / kBlock;
      const uint64_t n = std::min(end, (b + 1) * kBlock) - pos;
      Piece piece{i, {pos, r.dest.subspan(pos - r.offset, n), {}}};
      if (Claim(b, plan.mine)) {
        plan.memory.push_back(piece);
        plan.furthest = std::max(plan.furthest, pos + n);
      } else if (!plan.direct.empty() && plan.direct.back().request == i
                 && plan.direct.back().read.offset + plan.direct.back().read.dest.size() == pos) {
        io::ReadRequest& last = plan.direct.back().read;  // the piece before, also direct
        last.dest = {last.dest.data(), last.dest.size() + n};
      } else {
        plan.direct.push_back(piece);
      }
      pos += n;
    }
  }
}

bool CopyStream::State::Claim(uint64_t b, std::vector<uint64_t>& mine) {
  auto it = blocks.find(b);
  if (it == blocks.end()) {
    // A block refused now stays refused: its bytes are never read partly from memory and
    // partly direct, which would leave it unread whole, held until the stream stops.
    if (passed[b] || !Charge(b)) {
      passed[b] = true;
      return false;
    }
    it = blocks.try_emplace(b).first;
  }
  if (it->second.phase == Block::Phase::kQueued) {
    it->second.phase = Block::Phase::kFetching;
    mine.push_back(b);
  }
  return true;
}

void CopyStream::State::PlanAhead(uint64_t furthest, std::vector<uint64_t>& ahead) {
  const uint64_t until = std::min(size, furthest + kWindow);
  for (uint64_t b = furthest / kBlock;
       b * kBlock < until && blocks.size() - retired.size() < kMaxBlocks; ++b) {
    if (passed[b] || blocks.find(b) != blocks.end()) {
      continue;
    }
    if (!WithinShare(b) || !Charge(b)) {
      break;  // over budget: read ahead less
    }
    blocks.try_emplace(b);
    ahead.push_back(b);
  }
}

void CopyStream::State::ReadDirect(std::span<io::ReadRequest> requests,
                                   std::vector<Piece>& direct) {
  std::shared_ptr<cache::Origin> o;
  {
    MutexLock lock(mu);
    o = origin;
    ++running;
  }
  // Pieces that fit a vector read's chunk go first, so that GroupDirect can make vector reads
  // of them.
  std::stable_partition(direct.begin(), direct.end(),
                        [](const Piece& p) { return p.read.dest.size() <= kMaxVectorChunk; });
  std::vector<io::ReadRequest> ranges;
  ranges.reserve(direct.size());
  for (const Piece& p : direct) {
    ranges.push_back(p.read);
  }
  std::vector<cache::OriginRead> reads;
  GroupDirect(ranges, reads);
  const bool live = o != nullptr;
  if (live) {
    o->Read(reads);
    o.reset();
  } else {
    for (io::ReadRequest& r : ranges) {
      r.status = IoError("copy stream stopped", ECANCELED);
    }
  }
  for (size_t i = 0; i < direct.size(); ++i) {
    if (ranges[i].status) {
      origin_bytes.fetch_add(ranges[i].dest.size(), std::memory_order_relaxed);
    } else if (requests[direct[i].request].status) {
      requests[direct[i].request].status = ranges[i].status;
    }
  }
  origin_requests.fetch_add(live ? reads.size() : 0, std::memory_order_relaxed);
  MutexLock lock(mu);
  --running;
  cv.NotifyAll();
}

void CopyStream::State::GroupDirect(std::span<io::ReadRequest> ranges,
                                    std::vector<cache::OriginRead>& reads) {
  // Under the budget every copy reads so, a pgread's 64 KiB segments at a time: one request
  // per segment made 23 times the origin requests of copies with memory (8 copies at once),
  // and the origin gate (origin_inflight) counts requests.
  size_t start = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i <= ranges.size(); ++i) {
    const bool fits = i < ranges.size() && ranges[i].dest.size() <= kMaxVectorChunk;
    if (i > start
        && (!fits || i - start == kMaxVectorChunks
            || bytes + ranges[i].dest.size() > kMaxVectorBytes)) {
      reads.push_back({0, ranges.subspan(start, i - start)});
      start = i;
      bytes = 0;
    }
    if (i < ranges.size() && !fits) {
      reads.push_back({0, ranges.subspan(i, 1)});  // a plain read
      start = i + 1;
      continue;
    }
    if (i < ranges.size()) {
      bytes += ranges[i].dest.size();
    }
  }
}

void CopyStream::State::Deliver(std::span<io::ReadRequest> requests, const Piece& p) {
  io::ReadRequest& r = requests[p.request];
  const uint64_t b = p.read.offset / kBlock;
  auto it = blocks.find(b);
  while (it != blocks.end() && it->second.phase != Block::Phase::kDone) {
    cv.Wait(mu);
    it = blocks.find(b);
  }
  if (it == blocks.end()) {
    r.status = IoError("copy stream stopped", ECANCELED);
    return;
  }
  Block& blk = it->second;
  if (!blk.status) {
    r.status = blk.status;
    if (!blk.retired) {
      Erase(it);  // the cache's path reads it again
    }
    return;
  }
  const uint64_t n = p.read.dest.size();
  std::memcpy(p.read.dest.data(), blk.data.get() + (p.read.offset - b * kBlock), n);
  blk.consumed += n;
  if (blk.consumed >= blk.length && !blk.retired) {
    Retire(it);
  }
}

void CopyStream::State::Retire(std::map<uint64_t, Block>::iterator it) {
  passed[it->first] = true;
  it->second.retired = true;
  retired.push_back(it->first);
  while (!retired.empty()
         && (retired.size() > kKeepRead || (budget != nullptr && charged > budget->share()))) {
    Erase(blocks.find(retired.front()));
    retired.pop_front();
  }
}

CopyStream::CopyStream(std::shared_ptr<cache::Origin> origin,
                       uint64_t size,
                       Runner runner,
                       CopyBudget* budget)
    : state_(std::make_shared<State>(std::move(origin), size, std::move(runner), budget)) {}

CopyStream::~CopyStream() {
  Stop();
}

Status CopyStream::Read(std::span<io::ReadRequest> requests) {
  State& s = *state_;
  State::ReadPlan plan;
  {
    MutexLock lock(s.mu);
    if (s.stopping) {
      return IoError("copy stream stopped", ECANCELED);
    }
    if (!s.joined && s.budget != nullptr) {
      s.budget->Join();
      s.joined = true;
    }
    for (io::ReadRequest& r : requests) {
      r.status = OkStatus();
    }
    s.Split(requests, plan);
    s.PlanAhead(plan.furthest, plan.ahead);
  }
  // The blocks ahead go out first, so they travel while this read waits for its own.
  for (uint64_t b : plan.ahead) {
    s.runner([state = state_, b] { state->RunAhead(b); });
  }
  if (!plan.direct.empty()) {
    s.ReadDirect(requests, plan.direct);
  }
  if (!plan.mine.empty()) {
    s.Fetch(plan.mine);
  }
  MutexLock lock(s.mu);
  for (const State::Piece& p : plan.memory) {
    s.Deliver(requests, p);
  }
  for (const io::ReadRequest& r : requests) {
    if (!r.status) {
      return r.status;
    }
  }
  return OkStatus();
}

void CopyStream::Stop() {
  State& s = *state_;
  MutexLock lock(s.mu);
  s.stopping = true;
  while (s.running != 0) {
    s.cv.Wait(s.mu);
  }
  while (!s.blocks.empty()) {
    s.Erase(s.blocks.begin());
  }
  s.retired.clear();
  if (s.joined) {
    s.budget->Leave();
    s.joined = false;
  }
  s.origin.reset();
  s.cv.NotifyAll();
}

uint64_t CopyStream::origin_bytes() const {
  return state_->origin_bytes.load(std::memory_order_relaxed);
}

uint64_t CopyStream::origin_requests() const {
  return state_->origin_requests.load(std::memory_order_relaxed);
}

uint64_t CopyThrough::DetectAt(uint64_t size, double fraction) {
  const auto cap =
      static_cast<uint64_t>(static_cast<double>(size) * std::clamp(fraction, 0.0, 1.0));
  const uint64_t margin = kCopyInFlight + readahead::FileAhead::kSeqWindowMax;
  return std::min(size, std::max({kMinPrefix, size / 100, cap > margin ? cap - margin : 0}));
}

std::unique_ptr<CopyThrough> CopyThrough::For(uint64_t size,
                                              double fraction,
                                              std::shared_ptr<cache::Origin> origin,
                                              CopyStream::Runner runner,
                                              CopyCounters* counters,
                                              CopyBudget* budget) {
  if (fraction >= 1.0 || size < readahead::BulkDetector::kMinBytes || !origin) {
    return nullptr;
  }
  return std::make_unique<CopyThrough>(size, fraction, std::move(origin), std::move(runner),
                                       counters, budget);
}

CopyThrough::CopyThrough(uint64_t size,
                         double fraction,
                         std::shared_ptr<cache::Origin> origin,
                         CopyStream::Runner runner,
                         CopyCounters* counters,
                         CopyBudget* budget)
    : detector_(size, readahead::BulkDetector::Bytes{DetectAt(size, fraction)}),
      stream_(std::move(origin), size, std::move(runner), budget),
      counters_(counters) {}

bool CopyThrough::NoteProgress(std::span<const fetch::Range> reads) {
  // XrdCl reads a page again on its own when its pgread checksum did not match (4 KiB reads
  // of bytes the copy already read): neither a copy's progress nor an analysis's, so not
  // counted (they would pull the mean read below BulkDetector::kMinRead).
  const uint64_t prefix = detector_.prefix();
  bool progress = false;
  for (const fetch::Range& r : reads) {
    const uint64_t end = r.end();
    progress = progress || end > prefix;
    uint64_t seen = furthest_.load(std::memory_order_relaxed);
    while (end > seen && !furthest_.compare_exchange_weak(seen, end, std::memory_order_relaxed)) {
    }
  }
  return progress && detector_.Note(reads);
}

void CopyThrough::Recognised() {
  // What the cache was asked for before: the reads so far and the read-ahead they started.
  frontier_.store(furthest_.load(std::memory_order_relaxed) + readahead::FileAhead::kSeqWindowMax,
                  std::memory_order_relaxed);
  if (!copying_.exchange(true, std::memory_order_acq_rel) && counters_ != nullptr) {
    counters_->copies.fetch_add(1, std::memory_order_relaxed);
    FERRY_DEBUG("proxy", "a copy: served through from %llu",
                static_cast<unsigned long long>(detector_.prefix()));
  }
}

bool CopyThrough::NoteServed(const fetch::Range& sent) {
  if (!copying_.load(std::memory_order_acquire) && NoteProgress({&sent, 1})) {
    Recognised();
  }
  return copying();
}

bool CopyThrough::Cached(cache::CachedFile& cached, std::span<const io::ReadRequest> requests) {
  const uint64_t frontier = frontier_.load(std::memory_order_relaxed);
  bool below = true;
  for (const io::ReadRequest& r : requests) {
    below = below && r.offset + r.dest.size() <= frontier;
  }
  return below || cached.AllHeld(requests);
}

Status CopyThrough::Read(cache::CachedFile& cached,
                         std::span<io::ReadRequest> requests,
                         uint64_t& through) {
  through = 0;
  if (!copying_.load(std::memory_order_acquire)) {
    thread_local std::vector<fetch::Range> reads;  // no allocation once warm
    reads.clear();
    for (const io::ReadRequest& r : requests) {
      reads.push_back({r.offset, r.dest.size()});
    }
    if (!NoteProgress(reads)) {
      return cached.ReadV(requests);
    }
    Recognised();
  }
  // Untracked: a read through the cache must not start read-ahead beyond what it holds.
  if (Cached(cached, requests)) {
    return cached.ReadUntracked(requests);
  }
  if (Status st = stream_.Read(requests); st) {
    for (const io::ReadRequest& r : requests) {
      through += r.dest.size();
    }
    if (counters_ != nullptr) {
      counters_->bytes_through.fetch_add(through, std::memory_order_relaxed);
    }
    return st;
  }
  return cached.ReadV(requests);  // fail-open: the cache's path, with its retries
}

}  // namespace ferry::proxy
