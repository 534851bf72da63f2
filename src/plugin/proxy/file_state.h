// FileState: the state of one ProxyFile shared with the tasks working for it (asynchronous
// reads, read-ahead), and the read-ahead entry points (file_ahead.cc). Private to the proxy
// library: proxy_file.cc and file_ahead.cc.
//
// Lifetime: owned by a shared_ptr held by the ProxyFile and by every queued task, so a task
// that outlives the file's Close finds valid (closed) state. Thread-safety: the members say
// which mutex guards them; counters are atomics.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "fetch/range.h"
#include "io/byte_source.h"
#include "plugin/xrdcl/xrd_origin.h"
#include "readahead/read_ahead.h"

class XrdSfsAio;

namespace ferry::proxy {

class ProxyService;

struct AioOp {
  XrdSfsAio* aio = nullptr;
  bool pg = false;
};

enum class AheadState { kUnknown, kLoading, kOn, kOff };

struct FileState {
  explicit FileState(ProxyService& s) : service(s) {}
  ProxyService& service;
  std::string path;
  std::string url;
  std::string user;
  std::string client;  // the client's host: read-ahead memory is per client host and tree
  std::unique_ptr<cache::CachedFile> cached;  // set by a successful Open, reset by Close
  std::shared_ptr<plugin::XrdOrigin> origin;
  std::shared_ptr<cache::Origin> metered;  // `origin` as the cache sees it

  // Read-ahead (read_ahead.h): its own cache handle, so that the client's counters stay the
  // client's; the fetches join the client's misses in the entry's in-flight registry.
  std::mutex ahead_mu;
  std::condition_variable ahead_cv;
  AheadState ahead_state = AheadState::kUnknown;
  std::unique_ptr<readahead::ReadAhead> ahead;
  std::unique_ptr<cache::CachedFile> ahead_file;
  std::vector<fetch::Range> ahead_early;  // vector reads that came while the trees loaded
  uint32_t ahead_running = 0;             // a tree load or fetches using ahead_file now
  bool closing = false;
  std::atomic<bool> ahead_decided{false};  // ahead_state left kUnknown (a lock-free check)
  std::atomic<bool> header_read{false};    // a client read the file's first bytes
  // Sequential read-ahead (ahead_mu): where the client's plain reads will continue, how many
  // followed each other, and up to where fetches were queued.
  uint64_t seq_next = 0;
  uint32_t seq_run = 0;
  uint64_t seq_queued = 0;
  double open_unix = 0;
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> bytes_bypassed{0};
  std::atomic<uint64_t> bytes_prefetched{0};
  std::atomic<uint64_t> prefetch_requests{0};

  // Asynchronous reads waiting for a worker, and whether a worker is draining them.
  std::mutex aio_mu;
  std::condition_variable aio_cv;
  std::vector<AioOp> aio_pending;
  uint32_t aio_drainers = 0;  // workers serving this file's queue
  uint32_t aio_starting = 0;  // ... of which not yet taken a batch
};

// Read-ahead of one file (read_ahead.h, ahead_scheduler.h). Every client read passes here
// first; the first one past a ROOT file's header loads its trees (one atomic load otherwise).
void MaybeLoadAhead(const std::shared_ptr<FileState>& s, std::span<const io::ReadRequest> reqs);
// A client vector read: the baskets that come after it are queued for fetching now.
void ReadAheadOf(const std::shared_ptr<FileState>& s, std::span<const io::ReadRequest> reqs);
// Client plain or page reads: when they follow each other through the file (a copy), the next
// bytes are fetched before they are asked for.
void SequentialAhead(const std::shared_ptr<FileState>& s, std::span<const io::ReadRequest> reqs);
// The file closes: queued fetches are dropped, running ones finish, the read-ahead handle is
// closed and its origin traffic counted (bytes_prefetched, prefetch_requests).
void StopAhead(FileState& s);

// Closes an origin handle without waiting for the origin (a WAN round trip the client's close
// need not pay): its extra channels, then channel 0; released on a worker once XrdCl answered.
void CloseOrigin(std::shared_ptr<plugin::XrdOrigin> origin, uint16_t timeout);

// FERRY_LOG=debug in xrootd's environment: read-ahead decisions and vector-read service times
// in xrootd's log (its stderr), with the wall-clock time.
bool Debug();
__attribute__((format(printf, 1, 2))) void DebugLog(const char* format, ...);

}  // namespace ferry::proxy
