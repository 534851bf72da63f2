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

  State(std::shared_ptr<cache::Origin> o, uint64_t s, Runner r)
      : size(s), runner(std::move(r)), origin(std::move(o)), read((s + kBlock - 1) / kBlock) {}

  uint64_t BlockLength(uint64_t b) const { return std::min(kBlock, size - b * kBlock); }
  // Fetches blocks `mine` (claimed: kFetching) with one origin call, then marks them done.
  void Fetch(const std::vector<uint64_t>& mine);
  // The ahead task of block b: fetches it unless a reader claimed it or the stream stopped.
  void RunAhead(uint64_t b);
  // True for a read of bytes of a block already read whole and freed (a client's second read
  // of a page): read from the origin as it is, not as a block.
  bool Reread(const io::ReadRequest& r) FERRY_REQUIRES(mu);
  // Reads the requests `direct` straight from the origin into their buffers.
  void ReadDirect(std::span<io::ReadRequest> requests, const std::vector<size_t>& direct);
  // Claims the blocks of `requests` (but those in `direct`) nobody fetches yet into `mine`, and
  // queues up to kWindow beyond the furthest one into `ahead`.
  void Plan(std::span<io::ReadRequest> requests,
            const std::vector<bool>& direct,
            std::vector<uint64_t>& mine,
            std::vector<uint64_t>& ahead) FERRY_REQUIRES(mu);
  // Copies a request's bytes out of its blocks once they are done; frees blocks read whole.
  void Deliver(io::ReadRequest& r) FERRY_REQUIRES(mu);

  const uint64_t size;
  const Runner runner;
  Mutex mu;
  CondVar cv;
  std::shared_ptr<cache::Origin> origin FERRY_GUARDED_BY(mu);  // null once stopped
  std::map<uint64_t, Block> blocks FERRY_GUARDED_BY(mu);
  std::vector<bool> read FERRY_GUARDED_BY(mu);  // blocks read whole: not fetched ahead
  // Blocks read whole, oldest first, kept while there are at most kKeepRead of them: XrdCl
  // reads a page of a pgread again when its checksum does not match, soon after the first
  // read, and each such page from the origin would cost a round trip.
  std::deque<uint64_t> retired FERRY_GUARDED_BY(mu);
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

bool CopyStream::State::Reread(const io::ReadRequest& r) {
  const uint64_t end = r.offset + r.dest.size();
  for (uint64_t b = r.offset / kBlock; b * kBlock < end; ++b) {
    if (read[b] && blocks.find(b) == blocks.end()) {
      return true;
    }
  }
  return false;
}

void CopyStream::State::ReadDirect(std::span<io::ReadRequest> requests,
                                   const std::vector<size_t>& direct) {
  std::shared_ptr<cache::Origin> o;
  {
    MutexLock lock(mu);
    o = origin;
    ++running;
  }
  std::vector<cache::OriginRead> reads;
  reads.reserve(direct.size());
  for (size_t i : direct) {
    reads.push_back({0, requests.subspan(i, 1)});
    if (!o) {
      requests[i].status = IoError("copy stream stopped", ECANCELED);
    }
  }
  if (o) {
    o->Read(reads);
    o.reset();
  }
  for (size_t i : direct) {
    if (requests[i].status) {
      origin_bytes.fetch_add(requests[i].dest.size(), std::memory_order_relaxed);
    }
  }
  origin_requests.fetch_add(direct.size(), std::memory_order_relaxed);
  MutexLock lock(mu);
  --running;
  cv.NotifyAll();
}

void CopyStream::State::Plan(std::span<io::ReadRequest> requests,
                             const std::vector<bool>& direct,
                             std::vector<uint64_t>& mine,
                             std::vector<uint64_t>& ahead) {
  uint64_t furthest = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const io::ReadRequest& r = requests[i];
    if (r.dest.empty() || direct[i]) {
      continue;
    }
    const uint64_t end = r.offset + r.dest.size();
    furthest = std::max(furthest, end);
    for (uint64_t b = r.offset / kBlock; b * kBlock < end; ++b) {
      Block& blk = blocks[b];  // a new block starts queued
      if (blk.phase == Block::Phase::kQueued) {
        blk.phase = Block::Phase::kFetching;
        mine.push_back(b);
      }
    }
  }
  const uint64_t until = std::min(size, furthest + kWindow);
  for (uint64_t b = furthest / kBlock;
       b * kBlock < until && blocks.size() - retired.size() < kMaxBlocks; ++b) {
    if (!read[b] && blocks.find(b) == blocks.end()) {
      blocks[b];
      ahead.push_back(b);
    }
  }
}

void CopyStream::State::Deliver(io::ReadRequest& r) {
  const uint64_t end = r.offset + r.dest.size();
  for (uint64_t pos = r.offset; pos < end;) {
    const uint64_t b = pos / kBlock;
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
        blocks.erase(it);  // the cache's path reads it again
      }
      return;
    }
    const uint64_t in = pos - b * kBlock;
    const uint64_t n = std::min(end - pos, blk.length - in);
    std::memcpy(r.dest.data() + (pos - r.offset), blk.data.get() + in, n);
    blk.consumed += n;
    if (blk.consumed >= blk.length && !blk.retired) {
      read[b] = true;
      blk.retired = true;
      retired.push_back(b);
      if (retired.size() > kKeepRead) {
        blocks.erase(retired.front());
        retired.pop_front();
      }
    }
    pos += n;
  }
}

CopyStream::CopyStream(std::shared_ptr<cache::Origin> origin, uint64_t size, Runner runner)
    : state_(std::make_shared<State>(std::move(origin), size, std::move(runner))) {}

CopyStream::~CopyStream() {
  Stop();
}

Status CopyStream::Read(std::span<io::ReadRequest> requests) {
  State& s = *state_;
  std::vector<uint64_t> mine;
  std::vector<uint64_t> ahead;
  std::vector<bool> is_direct(requests.size());
  std::vector<size_t> direct;
  {
    MutexLock lock(s.mu);
    if (s.stopping) {
      return IoError("copy stream stopped", ECANCELED);
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      requests[i].status = OkStatus();
      if (!requests[i].dest.empty() && s.Reread(requests[i])) {
        is_direct[i] = true;
        direct.push_back(i);
      }
    }
    s.Plan(requests, is_direct, mine, ahead);
  }
  // The blocks ahead go out first, so they travel while this read waits for its own.
  for (uint64_t b : ahead) {
    s.runner([state = state_, b] { state->RunAhead(b); });
  }
  if (!direct.empty()) {
    s.ReadDirect(requests, direct);
  }
  if (!mine.empty()) {
    s.Fetch(mine);
  }
  MutexLock lock(s.mu);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].dest.empty() && !is_direct[i]) {
      s.Deliver(requests[i]);
    }
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
  s.blocks.clear();
  s.retired.clear();
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
                                              CopyCounters* counters) {
  if (fraction >= 1.0 || size < readahead::BulkDetector::kMinBytes || !origin) {
    return nullptr;
  }
  return std::make_unique<CopyThrough>(size, fraction, std::move(origin), std::move(runner),
                                       counters);
}

CopyThrough::CopyThrough(uint64_t size,
                         double fraction,
                         std::shared_ptr<cache::Origin> origin,
                         CopyStream::Runner runner,
                         CopyCounters* counters)
    : detector_(size, readahead::BulkDetector::Bytes{DetectAt(size, fraction)}),
      stream_(std::move(origin), size, std::move(runner)),
      counters_(counters) {}

bool CopyThrough::NoteProgress(std::span<const io::ReadRequest> requests) {
  // XrdCl reads a page again on its own when its pgread checksum did not match (4 KiB reads
  // of bytes the copy already read): neither a copy's progress nor an analysis's, so not
  // counted (they would pull the mean read below BulkDetector::kMinRead).
  const uint64_t prefix = detector_.prefix();
  bool progress = false;
  for (const io::ReadRequest& r : requests) {
    const uint64_t end = r.offset + r.dest.size();
    progress = progress || end > prefix;
    uint64_t seen = furthest_.load(std::memory_order_relaxed);
    while (end > seen && !furthest_.compare_exchange_weak(seen, end, std::memory_order_relaxed)) {
    }
  }
  return progress && detector_.Note(requests);
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
    if (!NoteProgress(requests)) {
      return cached.ReadV(requests);
    }
    // What the cache was asked for before: the reads so far and the read-ahead they started.
    frontier_.store(furthest_.load(std::memory_order_relaxed) + readahead::FileAhead::kSeqWindowMax,
                    std::memory_order_relaxed);
    if (!copying_.exchange(true, std::memory_order_acq_rel) && counters_ != nullptr) {
      counters_->copies.fetch_add(1, std::memory_order_relaxed);
      FERRY_DEBUG("proxy", "a copy: served through from %llu",
                  static_cast<unsigned long long>(detector_.prefix()));
    }
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
