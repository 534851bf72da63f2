// Read-ahead of one proxy file: loading its trees, predictions, seeds, fetches (see
// read_ahead.h for what is predicted and ahead_scheduler.h for how fetches are run).
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "base/log.h"
#include "cache/cached_source.h"
#include "plugin/proxy/ahead_scheduler.h"
#include "plugin/proxy/file_state.h"
#include "plugin/proxy/service.h"
#include "rootio/layout.h"
#include "rootio/root_file.h"

namespace ferry::proxy {

bool Debug() {
  return log::Enabled(log::Level::kDebug);
}

__attribute__((format(printf, 1, 2))) void DebugLog(const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  // The wall-clock time lets a read-ahead decision be matched with the origin's log.
  log::Printf(log::Level::kDebug, "proxy", "%.3f %s", UnixNow(), line);
}

namespace {

// Sequential read-ahead: after this many reads that follow each other, the next window is
// fetched; the window doubles from kSeqWindowMin up to kSeqWindowMax, in fetches of kSeqFetch.
constexpr uint32_t kSeqRunToStart = 3;
constexpr uint64_t kSeqWindowMin = 4 << 20;
constexpr uint64_t kSeqWindowMax = 16 << 20;
constexpr uint64_t kSeqFetch = 2 << 20;

// Read-ahead fetches are not made smaller than this (a client reading a few small baskets at a
// time would otherwise cost one origin request per basket).
constexpr uint64_t kMinAheadFetchBytes = 256 << 10;

// Every dataset of a ROOT file (their units are what ReadAhead predicts).
Result<std::vector<rootio::LayoutSet>> LoadTrees(cache::CachedFile& file, const std::string& name) {
  cache::CachedSource source(file, name);
  auto root = FERRY_TRY(rootio::RootFile::Open(source));
  return rootio::LoadLayout(*root);
}

// Fetches predicted baskets into the cache (through the read-ahead handle; the copy into a
// scratch buffer is the price of reusing the client read path with its joins and retries).
void FetchAhead(const std::shared_ptr<FileState>& s, const std::vector<fetch::Range>& ranges) {
  uint64_t total = 0;
  for (const fetch::Range& r : ranges) {
    total += r.length;
  }
  // Kept per scheduler thread: its pages stay mapped, so a fetch costs no page faults.
  thread_local std::vector<uint8_t> buffer;
  if (buffer.size() < total) {
    buffer.resize(total);
  }
  std::vector<io::ReadRequest> requests;
  requests.reserve(ranges.size());
  uint64_t pos = 0;
  for (const fetch::Range& r : ranges) {
    requests.push_back({r.offset, {buffer.data() + pos, r.length}, {}});
    pos += r.length;
  }
  (void)s->ahead_file->ReadV(requests);  // a failed fetch is simply not a hit later
}

// A queued fetch starts: skipped when the file closed meanwhile (Close waits only for fetches
// that started, which use the read-ahead handle).
void RunAhead(const std::shared_ptr<FileState>& s, const std::vector<fetch::Range>& ranges) {
  {
    std::lock_guard<std::mutex> lock(s->ahead_mu);
    if (s->closing) {
      return;
    }
    ++s->ahead_running;
  }
  FetchAhead(s, ranges);
  std::lock_guard<std::mutex> lock(s->ahead_mu);
  --s->ahead_running;
  s->ahead_cv.notify_all();
}

// Queues predicted baskets (sorted by offset, which for a ROOT file is cluster order) in
// fetches of about `unit_bytes` each — the size of the client's own vector reads — so that the
// next one the client asks for comes first, alone, and they spread over the origin channels
// (one big fetch would make every unit wait for the last byte of all). Baskets
// the cache holds already are skipped: a warm pass predicts as much as a cold one and should
// cost nothing.
void QueueAhead(const std::shared_ptr<FileState>& state,
                std::span<const fetch::Range> ahead,
                uint64_t unit_bytes,
                AheadScheduler::Priority priority) {
  FileState& s = *state;
  const cache::Config& c = s.service.config().cache;
  auto submit = [&](std::vector<fetch::Range> group) {
    s.service.scheduler().Submit(priority,
                                 [state, group = std::move(group)] { RunAhead(state, group); });
  };
  const uint64_t budget =
      std::clamp<uint64_t>(unit_bytes, kMinAheadFetchBytes, c.max_request_bytes);
  std::vector<fetch::Range> group;
  uint64_t bytes = 0;
  for (const fetch::Range& r : ahead) {
    const io::ReadRequest probe{r.offset, {static_cast<uint8_t*>(nullptr), r.length}, {}};
    if (s.cached->AllHeld({&probe, 1})) {
      continue;
    }
    if (!group.empty() && (group.size() >= c.max_chunks || bytes + r.length > budget)) {
      submit(std::move(group));
      group.clear();
      bytes = 0;
    }
    group.push_back(r);
    bytes += r.length;
  }
  if (!group.empty()) {
    submit(std::move(group));
  }
}

// Predictions from client vector reads `chunks`; what they teach about the branches read goes
// to the service's memory, for the next files of the same trees.
void PredictFrom(const std::shared_ptr<FileState>& s, std::span<const fetch::Range> chunks) {
  thread_local std::vector<fetch::Range> ahead;
  ahead.clear();
  std::map<std::string, std::vector<std::string>> learned;
  s->ahead->OnRead(chunks, ahead, &learned);
  uint64_t read_bytes = 0;
  for (const fetch::Range& c : chunks) {
    read_bytes += c.length;
  }
  if (Debug()) {
    DebugLog("%s: vector read of %zu chunks at %llu -> %zu ahead%s", s->path.c_str(), chunks.size(),
             static_cast<unsigned long long>(chunks.empty() ? 0 : chunks[0].offset), ahead.size(),
             learned.empty() ? "" : ", branches learned");
  }
  for (const auto& [tree, branches] : learned) {
    s->service.branches().Learn(s->client + "\n" + tree, branches);
  }
  if (!ahead.empty()) {
    QueueAhead(s, ahead, read_bytes, AheadScheduler::Priority::kNow);
  }
}

// A file opened but not read yet gets the baskets of the branches last read in its trees.
void SeedFrom(const std::shared_ptr<FileState>& s,
              const std::string& tree,
              const std::vector<std::string>& branches) {
  std::vector<fetch::Range> ahead;
  s->ahead->Seed(tree, branches, ahead);
  if (Debug()) {
    DebugLog("%s: seeded with %zu branches of %s -> %zu ahead", s->path.c_str(), branches.size(),
             tree.c_str(), ahead.size());
  }
  if (!ahead.empty()) {
    // One cluster's baskets per fetch, as the client will ask for them; after the fetches of
    // files being read.
    uint64_t bytes = 0;
    for (const fetch::Range& r : ahead) {
      bytes += r.length;
    }
    QueueAhead(s, ahead, bytes / readahead::kSeedClusters, AheadScheduler::Priority::kLater);
  }
}

// The trees are loaded: predictions start from the vector reads that came meanwhile, or, when
// there were none, from what the memory knows of these trees (now, or when it learns it).
void AheadReady(const std::shared_ptr<FileState>& s) {
  std::vector<fetch::Range> early;
  {
    std::lock_guard<std::mutex> lock(s->ahead_mu);
    early.swap(s->ahead_early);
  }
  if (!early.empty()) {
    PredictFrom(s, early);
    return;
  }
  for (const std::string& tree : s->ahead->TreeNames()) {
    std::weak_ptr<FileState> weak = s;
    auto branches = s->service.branches().RecallOrWait(
        s->client + "\n" + tree, [weak, tree](const std::vector<std::string>& learned) {
          auto file = weak.lock();
          if (!file) {
            return false;
          }
          {
            std::lock_guard<std::mutex> lock(file->ahead_mu);
            if (file->closing) {
              return false;
            }
          }
          SeedFrom(file, tree, learned);
          return true;
        });
    if (!branches.empty()) {
      SeedFrom(s, tree, branches);
    }
  }
}

// Decides once per file whether read-ahead applies: when a client read past the file's header
// and the header held says "root", the trees are loaded (through the cache, on a worker; a
// ROOT reader read those bytes already, so they are hits).
void LoadAhead(const std::shared_ptr<FileState>& s) {
  {
    std::lock_guard<std::mutex> lock(s->ahead_mu);
    if (s->ahead_state != AheadState::kUnknown) {
      return;
    }
    s->ahead_state = AheadState::kLoading;
  }
  const uint32_t units = s->service.config().lookahead;
  // The client read these bytes: they are held, or on their way (joined), not a new request.
  uint8_t magic[4] = {};
  const bool root_header = units > 0 && s->cached->size() > 100 && !s->cached->pass_through()
                           && s->cached->Read(0, magic) && std::memcmp(magic, "root", 4) == 0;
  std::lock_guard<std::mutex> lock(s->ahead_mu);
  s->ahead_decided = true;
  if (!root_header || s->closing) {
    s->ahead_state = AheadState::kOff;
    s->ahead_early.clear();
    return;
  }
  ++s->ahead_running;
  s->service.pool().Submit([s, units] {
    std::unique_ptr<cache::CachedFile> handle;
    std::unique_ptr<readahead::ReadAhead> ahead;
    if (auto file = s->service.cache().Open(s->url, s->metered)) {
      handle = std::move(*file);
      if (auto trees = LoadTrees(*handle, s->path); trees && !trees->empty()) {
        ahead = std::make_unique<readahead::ReadAhead>(std::move(*trees), units);
      }
    }
    bool on = false;
    if (Debug()) {
      DebugLog("read-ahead for %s: %s (%zu baskets)", s->path.c_str(), ahead ? "on" : "off",
               ahead ? ahead->baskets() : 0);
    }
    {
      std::lock_guard<std::mutex> done(s->ahead_mu);
      if (!s->ahead_file) {  // sequential read-ahead may have opened one already
        s->ahead_file = std::move(handle);
      }
      on = ahead && s->ahead_file && !s->closing;
      s->ahead_state = on ? AheadState::kOn : AheadState::kOff;
      s->ahead = std::move(ahead);
    }
    if (on) {
      AheadReady(s);
    }
    std::lock_guard<std::mutex> done(s->ahead_mu);
    --s->ahead_running;
    s->ahead_cv.notify_all();
  });
}

}  // namespace

// A client read: the first one past the header, after a read of the header (what every ROOT
// reader does first, and a sparse reader of other files does not), decides the file's
// read-ahead; after that this is one atomic load.
void MaybeLoadAhead(const std::shared_ptr<FileState>& s, std::span<const io::ReadRequest> reqs) {
  if (s->ahead_decided.load(std::memory_order_acquire)) {
    return;
  }
  for (const io::ReadRequest& r : reqs) {
    if (r.offset == 0) {
      s->header_read.store(true, std::memory_order_release);
    } else if (s->header_read.load(std::memory_order_acquire)) {
      LoadAhead(s);
      return;
    }
  }
}

// A client vector read: the baskets that come after it are queued for fetching now.
void ReadAheadOf(const std::shared_ptr<FileState>& s, std::span<const io::ReadRequest> reqs) {
  thread_local std::vector<fetch::Range> chunks;
  chunks.clear();
  for (const io::ReadRequest& r : reqs) {
    chunks.push_back({r.offset, r.dest.size()});
  }
  {
    std::lock_guard<std::mutex> lock(s->ahead_mu);
    if (s->ahead_state == AheadState::kLoading || s->ahead_state == AheadState::kUnknown) {
      // Kept for when the trees are loaded (a bounded number of chunks).
      if (s->ahead_early.size() < 65536) {
        s->ahead_early.insert(s->ahead_early.end(), chunks.begin(), chunks.end());
      }
    }
    if (s->ahead_state != AheadState::kOn) {
      return;
    }
  }
  PredictFrom(s, chunks);
}

void SequentialAhead(const std::shared_ptr<FileState>& s, std::span<const io::ReadRequest> reqs) {
  if (reqs.empty() || s->service.config().lookahead == 0) {
    return;
  }
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  for (const io::ReadRequest& r : reqs) {
    lo = std::min(lo, r.offset);
    hi = std::max<uint64_t>(hi, r.offset + r.dest.size());
  }
  std::vector<fetch::Range> ahead;
  uint32_t run = 0;
  {
    std::lock_guard<std::mutex> lock(s->ahead_mu);
    // Reads of a copy arrive a few at a time and slightly out of order (several in flight):
    // a read that starts before where the last one ended and reaches past it continues the run.
    const bool continues = lo <= s->seq_next && hi > s->seq_next;
    s->seq_run = continues ? s->seq_run + 1 : (lo == 0 ? 1 : 0);
    s->seq_next = hi;
    if (s->seq_run < kSeqRunToStart || s->closing) {
      return;
    }
    const uint64_t window = std::min(
        kSeqWindowMax, kSeqWindowMin << std::min<uint32_t>(s->seq_run - kSeqRunToStart, 2));
    const uint64_t until = std::min(s->cached->size(), hi + window);
    uint64_t from = std::max(s->seq_queued, hi);
    if (until <= from || until - from < kSeqFetch / 2) {
      return;
    }
    if (!s->ahead_file) {
      auto file = s->service.cache().Open(s->url, s->metered);
      if (!file) {
        return;
      }
      s->ahead_file = std::move(*file);
    }
    for (; from < until; from += kSeqFetch) {
      ahead.push_back({from, std::min(kSeqFetch, until - from)});
    }
    s->seq_queued = until;
    run = s->seq_run;
  }
  if (Debug()) {
    DebugLog("%s: sequential reads (%u) -> %zu fetches ahead to %llu", s->path.c_str(), run,
             ahead.size(), static_cast<unsigned long long>(ahead.back().end()));
  }
  QueueAhead(s, ahead, kSeqFetch, AheadScheduler::Priority::kNow);
}

void StopAhead(FileState& s) {
  std::unique_lock<std::mutex> lock(s.ahead_mu);
  s.closing = true;
  s.ahead_cv.wait(lock, [&] { return s.ahead_running == 0; });
  if (s.ahead_file) {
    // What read-ahead fetched for this file is its own handle's origin traffic.
    const cache::HandleCounters& h = s.ahead_file->handle_counters();
    s.bytes_prefetched = h.bytes_from_origin.load();
    s.prefetch_requests = h.origin_requests.load();
    s.service.OnPrefetch(s.bytes_prefetched, s.prefetch_requests);
    s.ahead_file->Close();
    s.ahead_file.reset();
  }
}

}  // namespace ferry::proxy
