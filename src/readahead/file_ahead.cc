// FileAhead: see file_ahead.h (what is predicted: read_ahead.h; how fetches run: prefetcher.h).
#include "readahead/file_ahead.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/log.h"
#include "rootio/layout.h"
#include "rootio/root_file.h"

namespace ferry::readahead {
namespace {

// Reads of the application kept while the trees load (chunks), beyond which they are dropped.
constexpr size_t kMaxEarlyChunks = 65536;

// The handle's bytes for rootio, without feeding read-ahead (these are the cache's own reads).
// Remembers where the metadata lies: the lowest offset it read in the file's last quarter
// (where the metadata at the file's end — TTree records, streamer info, keys list, an
// RNTuple's footer and page lists — began) and the end of what it read before that, from
// offsets below Prefetcher::kMaxMetadataHead (the header, top directory, an RNTuple's header).
class UntrackedSource final : public io::ByteSource {
 public:
  explicit UntrackedSource(AheadTarget& file) : file_(file) {}
  uint64_t size() const override { return file_.size(); }
  const std::string& name() const override { return name_; }
  uint64_t tail_start() const { return tail_start_; }
  uint64_t head_end() const { return head_end_; }

 protected:
  Status DoReadAt(uint64_t offset, std::span<uint8_t> dest) override {
    Note(offset, dest.size());
    io::ReadRequest r{offset, dest, {}};
    return file_.ReadUntracked({&r, 1});
  }
  void DoReadV(std::span<io::ReadRequest> requests) override {
    for (const io::ReadRequest& r : requests) {
      Note(r.offset, r.dest.size());
    }
    (void)file_.ReadUntracked(requests);
  }

 private:
  void Note(uint64_t offset, uint64_t length) {
    if (offset >= size() - size() / 4) {
      tail_start_ = std::min(tail_start_, offset);
    } else if (offset < Prefetcher::kMaxMetadataHead) {
      head_end_ = std::max(head_end_, offset + length);
    }
  }

  AheadTarget& file_;
  std::string name_ = "read-ahead";
  uint64_t tail_start_ = UINT64_MAX;
  uint64_t head_end_ = 0;
};

struct MetadataExtent {
  uint64_t tail_start = UINT64_MAX;
  uint64_t head_end = 0;
};

// `extent`: see UntrackedSource.
Result<std::vector<rootio::LayoutSet>> LoadTrees(AheadTarget& file, MetadataExtent& extent) {
  UntrackedSource source(file);
  auto root = FERRY_TRY(rootio::RootFile::Open(source));
  auto sets = FERRY_TRY(rootio::LoadLayout(*root));
  extent = {source.tail_start(), source.head_end()};
  return sets;
}

uint64_t Overlap(const fetch::Range& r, std::span<const fetch::Range> sorted) {
  auto it = std::upper_bound(sorted.begin(), sorted.end(), r.offset,
                             [](uint64_t off, const fetch::Range& x) { return off < x.offset; });
  if (it != sorted.begin()) {
    --it;
  }
  uint64_t n = 0;
  for (; it != sorted.end() && it->offset < r.end(); ++it) {
    const uint64_t lo = std::max(it->offset, r.offset);
    const uint64_t hi = std::min(it->end(), r.end());
    n += hi > lo ? hi - lo : 0;
  }
  return n;
}

}  // namespace

FileAhead::FileAhead(AheadTarget& file,
                     Prefetcher& prefetcher,
                     LinkMeter& meter,
                     uint64_t max_window,
                     uint32_t max_chunks,
                     bool root_name,
                     FileAheadOptions options)
    : file_(file),
      prefetcher_(prefetcher),
      meter_(meter),
      max_window_(std::max<uint64_t>(max_window, kMinUnit)),
      max_chunks_(std::max<uint32_t>(max_chunks, 1)),
      root_name_(root_name),
      options_(std::move(options)) {}

bool FileAhead::BeforeRead(std::span<const io::ReadRequest> requests) {
  if (reading_.fetch_add(1, std::memory_order_relaxed) >= kOwnAheadDepth) {
    overlapped_.fetch_add(1, std::memory_order_relaxed);
  }
  thread_local std::vector<fetch::Range> chunks;
  chunks.clear();
  for (const io::ReadRequest& r : requests) {
    if (!r.dest.empty()) {
      chunks.push_back({r.offset, r.dest.size()});
    }
  }
  bool header = false;
  const bool followed = Follow(chunks, header, /*defer_learning=*/true, requests);
  // A cold file: the metadata fetch starts beside the header read (which joins it or it the
  // header read), not one round trip after it.
  if (header && root_name_ && !file_.AllHeld(requests)) {
    StartLoad();
  }
  return followed;
}

void FileAhead::Served(std::span<const fetch::Range> ranges) {
  bool header = false;
  // Held: no metadata fetch for a header read, and nothing of the application's to wait for.
  (void)Follow(ranges, header, /*defer_learning=*/false);
}

bool FileAhead::Follow(std::span<const fetch::Range> chunks,
                       bool& idle_header,
                       bool defer_learning,
                       std::span<const io::ReadRequest> requests) {
  if (options_.sequential) {
    Sequential(chunks);
  }
  const State state = state_.load(std::memory_order_acquire);
  if (state == State::kOff) {
    return false;
  }
  if (state == State::kIdle) {
    for (const fetch::Range& c : chunks) {
      idle_header = idle_header || c.offset == 0;
    }
    if (idle_header) {
      header_read_.store(true, std::memory_order_relaxed);
    }
    return false;
  }
  std::map<std::string, std::vector<std::string>> learned;
  std::vector<Group> groups;
  size_t baskets = 0;
  bool first_window = false;
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return false;
    }
    if (state_.load(std::memory_order_relaxed) == State::kLoading) {
      if (early_.size() + chunks.size() <= kMaxEarlyChunks) {
        early_.insert(early_.end(), chunks.begin(), chunks.end());
        early_ends_.push_back(early_.size());
      }
      return false;
    }
    // The state read above may be stale: Load() can have turned read-ahead off (not a ROOT
    // file, no tree) meanwhile. Read again under mu_, kOn means the predictor exists.
    if (state_.load(std::memory_order_relaxed) != State::kOn) {
      return false;
    }
    const uint32_t was = level_;
    baskets = ObserveLocked(chunks, learned);
    FillLocked(groups);
    // The file's first data read, at its tree's first entry, with nothing seeded: its window
    // would go out before the read's own miss, on the one connection the origin serves in
    // order, and the application would wait for it (issue 38: the first zlib-1 file's 1.35 MB
    // behind 8 MB of its own read-ahead). Held until that miss is on its way (OwnFetchStarts),
    // or the read was served without one (AfterRead).
    first_window = defer_learning && was == 0 && level_ == kTopLevel - 1 && !groups.empty();
    if (defer_learning && !learned.empty()) {
      // What the branch memory learns seeds the files opened ahead (a window of clusters each),
      // and those fetches, sent now, would go out before this read's own miss and share the
      // link with it while the application waits: an in-order reader's first data read waited
      // for the next files' seeds (issue 38: 1.6 MB behind 3.2 MB of seeds, 3 round trips of
      // a new connection). They go out once this read is served (AfterRead).
      for (auto& [tree, branches] : learned) {
        unlearned_[tree] = std::move(branches);
      }
      learned.clear();
      has_unlearned_.store(true, std::memory_order_release);
    }
  }
  Learn(learned);
  if (first_window && !file_.AllHeld(requests)) {
    MutexLock lock(mu_);
    for (Group& g : groups) {
      held_.push_back(std::move(g));
    }
    groups.clear();
    has_held_.store(true, std::memory_order_release);
  }
  Submit(groups);
  return baskets > 0;
}

void FileAhead::OwnFetchStarts() {
  if (!has_held_.load(std::memory_order_acquire)) {
    return;
  }
  std::vector<Group> groups;
  {
    MutexLock lock(mu_);
    groups.swap(held_);
    has_held_.store(false, std::memory_order_relaxed);
  }
  Submit(groups);
}

void FileAhead::AfterRead(std::span<const io::ReadRequest> requests, bool missed) {
  reading_.fetch_sub(1, std::memory_order_relaxed);
  OwnFetchStarts();  // a read that needed no fetch of its own
  if (has_unlearned_.load(std::memory_order_acquire)) {
    std::map<std::string, std::vector<std::string>> learned;
    {
      MutexLock lock(mu_);
      learned.swap(unlearned_);
      has_unlearned_.store(false, std::memory_order_relaxed);
    }
    Learn(learned);
  }
  if (!missed || state_.load(std::memory_order_acquire) != State::kIdle
      || !header_read_.load(std::memory_order_relaxed)) {
    return;
  }
  // A read past a header that hit (a warm file whose first pass stopped early) missed: load.
  (void)requests;
  StartLoad();
}

void FileAhead::WarmUp() {
  if (root_name_ && !file_.virtual_file()) {
    header_read_.store(true, std::memory_order_relaxed);
    StartLoad();
  }
}

void FileAhead::StartLoad() {
  // The trees load beside the application's own metadata reads (identical ones join), so that
  // the branches learned from the files read before (BranchMemory) seed this one's first
  // clusters while the application still reads its metadata.
  {
    MutexLock lock(mu_);
    if (stopping_ || state_.load() != State::kIdle) {
      return;
    }
    state_.store(State::kLoading, std::memory_order_release);
  }
  prefetcher_.Submit(Prefetcher::Kind::kLoad, 0, [self = shared_from_this()] { self->Load(); });
}

void FileAhead::Load() {
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    ++running_;
  }
  // The application read these bytes already: they are held, or joined while on their way.
  PrefetchMetadata();
  MetadataExtent extent;
  auto trees = file_.size() > 100
                   ? LoadTrees(file_, extent)
                   : Result<std::vector<rootio::LayoutSet>>(InvalidArgumentError("too small"));
  if (trees && !trees->empty()) {
    if (extent.tail_start < file_.size()) {
      prefetcher_.NoteMetadataTail(file_.size() - extent.tail_start);
    }
    prefetcher_.NoteMetadataHead(std::max(extent.head_end, kHeadBytes));
  }
  std::vector<std::string> names;
  std::vector<Group> groups;
  std::map<std::string, std::vector<std::string>> learned;
  {
    MutexLock lock(mu_);
    --running_;
    cv_.NotifyAll();
    if (!trees || trees->empty() || stopping_) {
      state_.store(State::kOff, std::memory_order_release);
      early_.clear();
      FERRY_DEBUG("readahead", "read-ahead off: %s",
                  trees ? "no tree" : trees.error().ToString().c_str());
      return;
    }
    ra_ = std::make_unique<ReadAhead>(std::move(*trees), /*units=*/kSeedClusters);
    state_.store(State::kOn, std::memory_order_release);
    // The reads made meanwhile teach the predictor what the application reads.
    size_t begin = 0;
    for (size_t end : early_ends_) {
      ObserveLocked(std::span(early_).subspan(begin, end - begin), learned);
      begin = end;
    }
    early_.clear();
    early_ends_.clear();
    FillLocked(groups);
    if (!observed_) {
      names = ra_->TreeNames();
    }
    FERRY_DEBUG("readahead", "read-ahead on: %zu baskets, %zu predictions", ra_->baskets(),
                preds_.size());
  }
  Learn(learned);
  Submit(groups);
  // Not read yet: the branches last read in these trees (now, or once some file teaches them).
  for (const std::string& tree : names) {
    std::weak_ptr<FileAhead> weak = weak_from_this();
    auto branches = prefetcher_.branches().RecallOrWait(
        MemoryKey(tree), [weak, tree](const std::vector<std::string>& learned_branches) {
          auto self = weak.lock();
          if (!self) {
            return false;
          }
          self->SeedFrom(tree, learned_branches);
          return true;
        });
    if (!branches.empty()) {
      SeedFrom(tree, branches);
    }
  }
}

void FileAhead::PrefetchMetadata() {
  // A cold file's metadata arrives one record per round trip when read as a reader reads it:
  // the header names the top directory, that the keys list at the end, that the TTree key,
  // that the TTree record (an RNTuple: its anchor, then its header near the start and its
  // footer and page lists at the end). One vector read of the file's head and tail — as long
  // as the last file's metadata head and tail were (Prefetcher::metadata_head, metadata_tail)
  // — fetches them together; the application's and LoadTrees' reads of them join it or hit.
  // (A head of one page left an RNTuple's header to a second round trip per file: issue 38.)
  // Not done for a handle on a virtual file (its metadata is held), nor for a file not named
  // *.root (it may not be a ROOT file at all: nothing is fetched before its header says so).
  const uint64_t size = file_.origin_size();
  if (!root_name_ || file_.virtual_file() || size <= kHeadBytes) {
    return;
  }
  const uint64_t head =
      std::max(kHeadBytes, std::min({prefetcher_.metadata_head(), size / kMaxTailShare, size}));
  std::vector<fetch::Range> ranges{{0, head}};
  const uint64_t tail = std::min(prefetcher_.metadata_tail(), size / kMaxTailShare);
  if (tail > 0 && size > head) {
    const uint64_t from = std::max(size - tail, head);
    ranges.push_back({from, size - from});
  }
  std::vector<fetch::Range> fetched;
  file_.Prefetch(ranges, fetched);
}

void FileAhead::SeedFrom(const std::string& tree, const std::vector<std::string>& branches) {
  std::vector<Group> groups;
  {
    MutexLock lock(mu_);
    if (stopping_ || observed_) {
      return;
    }
    std::vector<fetch::Range> ahead;
    ra_->Seed(tree, branches, ahead);
    uint64_t bytes = 0;
    for (const fetch::Range& r : ahead) {
      preds_[r.offset] = {static_cast<uint32_t>(r.length), Pred::kQueued, true, 0};
      queued_ += r.length;
      bytes += r.length;
    }
    // One cluster per fetch, as the application will ask for them.
    seed_cluster_bytes_ = std::max(seed_cluster_bytes_, bytes / kSeedClusters);
    GroupLocked(ahead, bytes / kSeedClusters, /*later=*/true, groups);
    FERRY_DEBUG("readahead", "seeded %zu branches of %s: %zu baskets", branches.size(),
                tree.c_str(), ahead.size());
  }
  Submit(groups);
}

void FileAhead::UsedLocked(const fetch::Range& r) {
  auto it = preds_.find(r.offset);
  if (it == preds_.end()) {
    return;  // held when predicted (nothing fetched), or cancelled
  }
  const uint64_t len = it->second.length;
  switch (it->second.state) {
    case Pred::kQueued:
      queued_ -= len;  // too late: the application fetches it itself
      break;
    case Pred::kInFlight:
      in_flight_ -= len;  // the application joins the fetch
      ++hits_;
      file_.CountAhead(1, 0);
      prefetcher_.AddOutstanding(-static_cast<int64_t>(len));
      break;
    case Pred::kLanded:
      landed_ -= len;
      ++hits_;
      file_.CountAhead(1, 0);
      prefetcher_.AddOutstanding(-static_cast<int64_t>(len));
      break;
    case Pred::kStale:
      return;  // the predictor reports a basket once; kept until its fetch ends
    case Pred::kDropped:
      ++hits_;  // landed after it was judged stale, read after all
      file_.CountAhead(1, 0);
      break;
  }
  preds_.erase(it);
}

void FileAhead::StaleLocked(const fetch::Range& r) {
  auto it = preds_.find(r.offset);
  if (it == preds_.end()) {
    return;
  }
  const uint64_t len = it->second.length;
  switch (it->second.state) {
    case Pred::kQueued:
      queued_ -= len;
      break;
    case Pred::kInFlight:
      it->second.state = Pred::kStale;  // counted when its fetch ends
      return;
    case Pred::kLanded:
      // Out of the window now; counted unused at Stop() unless a late read still uses it.
      landed_ -= len;
      prefetcher_.AddOutstanding(-static_cast<int64_t>(len));
      it->second.state = Pred::kDropped;
      return;
    case Pred::kStale:
    case Pred::kDropped:
      return;
  }
  preds_.erase(it);
}

size_t FileAhead::ObserveLocked(std::span<const fetch::Range> chunks,
                                std::map<std::string, std::vector<std::string>>& learned) {
  thread_local std::vector<fetch::Range> used;
  thread_local std::vector<fetch::Range> stale;
  used.clear();
  stale.clear();
  const ReadAhead::Observation obs = ra_->Observe(chunks, used, stale, &learned);
  if (obs.baskets == 0) {
    return 0;
  }
  // A prediction judged stale while its fetch runs (a reader with several reads in flight
  // delivers them out of order) and read now after all joins that fetch: a hit, not waste.
  // The predictor reports each basket once, so this is looked up here.
  for (const fetch::Range& c : chunks) {
    for (auto it = preds_.lower_bound(c.offset); it != preds_.end() && it->first < c.end(); ++it) {
      if (it->second.state == Pred::kStale) {
        it->second.state = Pred::kInFlight;
        used.push_back({it->first, it->second.length});
      } else if (it->second.state == Pred::kDropped) {
        used.push_back({it->first, it->second.length});
      }
    }
  }
  if (!observed_) {
    observed_ = true;
    // Seeds still queued as kLater: the application reads this file now.
    std::vector<fetch::Range> seeds;
    for (auto& [offset, p] : preds_) {
      if (p.state == Pred::kQueued && p.later) {
        p.later = false;
        seeds.push_back({offset, p.length});
      }
    }
    std::vector<Group> groups;
    GroupLocked(seeds, std::max(unit_, obs.bytes), /*later=*/false, groups);
    // Submitted with the groups FillLocked makes next (same caller).
    for (Group& g : groups) {
      promoted_.push_back(std::move(g));
    }
  }
  for (const fetch::Range& r : used) {
    UsedLocked(r);
  }
  for (const fetch::Range& r : stale) {
    StaleLocked(r);
  }
  unit_ = unit_ == 0 ? obs.bytes : (unit_ * 3 + obs.bytes) / 4;
  streak_ = obs.in_sequence ? streak_ + 1 : 0;
  const bool own_ahead = overlapped_.load(std::memory_order_relaxed) >= kOwnAheadReads;
  if (!obs.in_sequence || own_ahead) {
    // A seek: what is queued is for a position the reader left. (Or the reader reads ahead
    // itself: what is queued would compete with its own requests.)
    level_ = 0;
    for (auto it = preds_.begin(); it != preds_.end();) {
      if (it->second.state == Pred::kQueued) {
        queued_ -= it->second.length;
        it = preds_.erase(it);
      } else {
        ++it;
      }
    }
  } else if (level_ == 0) {
    // Trusted at once: a pass starting at its tree's first entry, or one that read what was
    // seeded; anything else gets one read's worth on probation after two reads in sequence
    // (one random read in a file of few clusters is often near the last one by chance).
    level_ = obs.used > 0 ? kTopLevel : obs.from_start ? kTopLevel - 1 : streak_ >= 2 ? 1 : 0;
  } else if (!stale.empty()) {
    level_ = std::max<uint32_t>(level_ - 1, 1);
  } else if (obs.used > 0) {
    level_ = std::min(level_ + 1, kTopLevel);
  }
  return obs.baskets;
}

uint64_t FileAhead::WindowLocked() const {
  if (level_ == 0) {
    return 0;
  }
  const uint64_t unit = std::max<uint64_t>(unit_, 1);
  if (level_ == 1) {
    return unit;  // on probation: the next read's worth
  }
  const uint64_t target = std::clamp<uint64_t>(2 * meter_.BandwidthDelay(), kMinWindowReads * unit,
                                               std::max(max_window_, unit));
  return std::max(2 * unit, target >> (kTopLevel - level_));
}

void FileAhead::FillLocked(std::vector<Group>& groups) {
  for (Group& g : promoted_) {
    groups.push_back(std::move(g));
  }
  promoted_.clear();
  if (!observed_) {
    FillLaterLocked(groups);
    return;
  }
  const uint64_t window = WindowLocked();
  const uint64_t have = queued_ + in_flight_ + landed_;
  if (stopping_ || window <= have) {
    return;
  }
  thread_local std::vector<fetch::Range> ahead;
  ahead.clear();
  ra_->Predict(window - have, ahead);
  FERRY_DEBUG(
      "readahead", "level %u window %llu have %llu: %zu predicted (link: rtt %.1f ms, %.1f MB/s)",
      level_, static_cast<unsigned long long>(window), static_cast<unsigned long long>(have),
      ahead.size(), meter_.rtt_s() * 1e3, meter_.rate_bps() / 1e6);
  QueueLocked(ahead, unit_, /*later=*/false, groups);
}

void FileAhead::QueueLocked(std::vector<fetch::Range>& ahead,
                            uint64_t unit,
                            bool later,
                            std::vector<Group>& groups) {
  for (const fetch::Range& r : ahead) {
    preds_[r.offset] = {static_cast<uint32_t>(r.length), Pred::kQueued, later, 0};
    queued_ += r.length;
  }
  std::sort(ahead.begin(), ahead.end(),
            [](const fetch::Range& a, const fetch::Range& b) { return a.offset < b.offset; });
  GroupLocked(ahead, unit, later, groups);
}

uint64_t FileAhead::LaterWindowLocked() const {
  if (seed_cluster_bytes_ == 0) {
    return 0;
  }
  return std::clamp<uint64_t>(2 * meter_.BandwidthDelay(), kMinWindowReads * seed_cluster_bytes_,
                              std::max(max_window_, seed_cluster_bytes_));
}

void FileAhead::FillLaterLocked(std::vector<Group>& groups) {
  // Continued only after the seeds left the queue (this runs when a fetch of the file ends):
  // the window is the one a read file would get, sized from the link, counted in clusters
  // since the application has read none of this file yet.
  if (stopping_ || seed_cluster_bytes_ == 0 || queued_ != 0) {
    return;
  }
  const uint64_t window = LaterWindowLocked();
  const uint64_t have = in_flight_ + landed_;
  if (window <= have) {
    return;
  }
  thread_local std::vector<fetch::Range> ahead;
  ahead.clear();
  ra_->Predict(window - have, ahead);
  QueueLocked(ahead, seed_cluster_bytes_, /*later=*/true, groups);
  FERRY_DEBUG("readahead", "not read yet: window %llu have %llu, %zu more baskets",
              static_cast<unsigned long long>(window), static_cast<unsigned long long>(have),
              ahead.size());
}

void FileAhead::GroupLocked(std::span<const fetch::Range> ranges,
                            uint64_t unit,
                            bool later,
                            std::vector<Group>& groups) {
  const uint64_t budget = std::max(unit, kMinUnit);
  Group g;
  g.later = later;
  for (const fetch::Range& r : ranges) {
    if (!g.ranges.empty() && (g.ranges.size() >= max_chunks_ || g.bytes + r.length > budget)) {
      groups.push_back(std::move(g));
      g = Group{};
      g.later = later;
    }
    g.ranges.push_back(r);
    g.bytes += r.length;
  }
  if (!g.ranges.empty()) {
    groups.push_back(std::move(g));
  }
}

void FileAhead::Submit(std::vector<Group>& groups) {
  for (Group& g : groups) {
    prefetcher_.Submit(
        g.later ? Prefetcher::Kind::kLater : Prefetcher::Kind::kNow, g.bytes,
        [self = shared_from_this(), ranges = std::move(g.ranges)] { self->RunFetch(ranges); },
        g.later ? options_.read_order : std::string());
  }
  groups.clear();
}

void FileAhead::Learn(std::map<std::string, std::vector<std::string>>& learned) {
  for (const auto& [tree, branches] : learned) {
    prefetcher_.branches().Learn(MemoryKey(tree), branches);
  }
  learned.clear();
}

void FileAhead::RunFetch(const std::vector<fetch::Range>& group) {
  std::vector<fetch::Range> mine;
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    // Only what is still wanted: used, stale or cancelled predictions were dropped meanwhile.
    for (const fetch::Range& r : group) {
      auto it = preds_.find(r.offset);
      if (it != preds_.end() && it->second.state == Pred::kQueued) {
        it->second.state = Pred::kInFlight;
        queued_ -= r.length;
        in_flight_ += r.length;
        mine.push_back(r);
      }
    }
    if (mine.empty()) {
      return;
    }
    ++running_;
  }
  const uint64_t bytes = fetch::TotalBytes(mine);
  prefetcher_.AddOutstanding(static_cast<int64_t>(bytes));
  std::vector<fetch::Range> fetched;
  file_.Prefetch(mine, fetched);
  std::vector<Group> groups;
  {
    MutexLock lock(mu_);
    for (const fetch::Range& r : mine) {
      auto it = preds_.find(r.offset);
      if (it == preds_.end()) {
        continue;  // used while in flight: counted then
      }
      Prediction& p = it->second;
      const uint64_t got = Overlap(r, fetched);
      in_flight_ -= p.length;
      if (p.state == Pred::kStale || got == 0) {
        // Nothing fetched: held already, or the application had it in flight — not
        // read-ahead's bytes. Stale: likely fetched for nothing, counted unused at Stop()
        // unless a reader with reads out of order still reads it.
        prefetcher_.AddOutstanding(-static_cast<int64_t>(p.length));
        if (p.state == Pred::kStale && got > 0) {
          p.state = Pred::kDropped;
          p.fetched = got;
        } else {
          preds_.erase(it);
        }
        continue;
      }
      p.state = Pred::kLanded;
      p.fetched = got;
      landed_ += p.length;
    }
    --running_;
    cv_.NotifyAll();
    FillLocked(groups);
  }
  Submit(groups);
}

std::string FileAhead::MemoryKey(const std::string& tree) const {
  return options_.memory_scope.empty() ? tree : options_.memory_scope + "\n" + tree;
}

void FileAhead::Sequential(std::span<const fetch::Range> chunks) {
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  uint64_t bytes = 0;
  for (const fetch::Range& c : chunks) {
    if (c.length != 0) {
      lo = std::min(lo, c.offset);
      hi = std::max(hi, c.end());
      bytes += c.length;
    }
  }
  if (hi == 0 || bytes < hi - lo) {
    return;  // nothing, or chunks with gaps between them: not a plain read
  }
  std::vector<fetch::Range> ahead;
  {
    MutexLock lock(mu_);
    // Reads of a copy arrive a few at a time and slightly out of order (several in flight):
    // a read that starts before where the last one ended and reaches past it continues the run.
    const bool continues = lo <= seq_next_ && hi > seq_next_;
    seq_run_ = continues ? seq_run_ + 1 : (lo == 0 ? 1 : 0);
    seq_next_ = hi;
    if (seq_run_ < kSeqRunToStart || stopping_) {
      return;
    }
    const uint64_t window =
        std::min(kSeqWindowMax, kSeqWindowMin << std::min<uint32_t>(seq_run_ - kSeqRunToStart, 2));
    const uint64_t until = std::min(file_.size(), hi + window);
    uint64_t from = std::max(seq_queued_, hi);
    if (until <= from || until - from < kSeqFetch / 2) {
      return;
    }
    for (; from < until; from += kSeqFetch) {
      ahead.push_back({from, std::min(kSeqFetch, until - from)});
    }
    seq_queued_ = until;
    FERRY_DEBUG("readahead", "sequential reads (%u): %zu fetches ahead to %llu", seq_run_,
                ahead.size(), static_cast<unsigned long long>(until));
  }
  for (const fetch::Range& r : ahead) {
    prefetcher_.Submit(Prefetcher::Kind::kNow, r.length,
                       [self = shared_from_this(), r] { self->RunSequentialFetch(r); });
  }
}

void FileAhead::RunSequentialFetch(const fetch::Range& range) {
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    ++running_;
  }
  // What the cache holds or has in flight already is not fetched again (Prefetch).
  std::vector<fetch::Range> fetched;
  file_.Prefetch({&range, 1}, fetched);
  MutexLock lock(mu_);
  --running_;
  cv_.NotifyAll();
}

void FileAhead::Stop() {
  MutexLock lock(mu_);
  stopping_ = true;
  while (running_ != 0) {
    cv_.Wait(mu_);
  }
  for (auto& [offset, p] : preds_) {
    if (p.state == Pred::kLanded || p.state == Pred::kDropped) {
      unused_bytes_ += p.fetched;
      file_.CountAhead(0, p.fetched);
    }
    if (p.state == Pred::kLanded) {
      prefetcher_.AddOutstanding(-static_cast<int64_t>(p.length));
    }
  }
  preds_.clear();
  queued_ = in_flight_ = landed_ = 0;
  held_.clear();
  if (state_.load() != State::kOn) {
    state_.store(State::kOff);
  }
  cv_.NotifyAll();
}

FileAhead::Snapshot FileAhead::snapshot() const {
  MutexLock lock(mu_);
  Snapshot s;
  s.on = state_.load() == State::kOn;
  s.level = level_;
  s.window = observed_ ? WindowLocked() : LaterWindowLocked();
  s.queued = queued_;
  s.in_flight = in_flight_;
  s.landed = landed_;
  s.hits = hits_;
  s.unused_bytes = unused_bytes_;
  return s;
}

template <typename Done>
bool FileAhead::WaitFor(Done done, int timeout_ms) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  MutexLock lock(mu_);
  while (!done()) {
    if (!cv_.WaitUntil(mu_, deadline)) {
      return done();
    }
  }
  return true;
}

bool FileAhead::WaitDecided(int timeout_ms) const {
  return WaitFor(
      [this] {
        const State s = state_.load();
        return s == State::kOn || s == State::kOff;
      },
      timeout_ms);
}

bool FileAhead::WaitLanded(uint64_t bytes, int timeout_ms) const {
  return WaitFor([this, bytes]() FERRY_REQUIRES(mu_) { return landed_ >= bytes; }, timeout_ms);
}

}  // namespace ferry::readahead
