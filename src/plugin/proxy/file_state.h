// FileState: the state of one ProxyFile shared with the tasks serving its asynchronous reads.
// Private to the proxy library (proxy_file.cc, service.cc). Read-ahead is the cache engine's
// (readahead::FileAhead, which the file's CachedFile drives).
//
// Lifetime: owned by a shared_ptr held by the ProxyFile and by every queued task, so a task
// that outlives the file's Close finds valid (closed) state. Thread-safety: the members say
// which mutex guards them; counters are atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "cache/cache.h"
#include "plugin/proxy/completion_order.h"
#include "plugin/proxy/copy_through.h"
#include "plugin/xrdcl/xrd_origin.h"

class XrdSfsAio;

namespace ferry::proxy {

class ProxyService;

struct AioOp {
  XrdSfsAio* aio = nullptr;
  bool pg = false;
  uint64_t ticket = 0;  // a page read's place in FileState::pg_order
};

struct FileState {
  explicit FileState(ProxyService& s) : service(s) {}
  ProxyService& service;
  std::string path;
  std::string url;
  std::string user;
  std::unique_ptr<cache::CachedFile> cached;  // set by a successful Open, reset by Close
  std::shared_ptr<plugin::XrdOrigin> origin;  // null for an only-if-cached handle
  bool only_if_cached = false;                // cached_only.h
  std::unique_ptr<CopyThrough> copy;          // null: copies are cached (copy_through.h)
  int disk = -1;  // the cache disk the handle is counted on (DiskSet::Opened)
  double open_unix = 0;
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> bytes_bypassed{0};

  // Asynchronous reads waiting for a worker, and whether a worker is draining them.
  Mutex aio_mu;
  CondVar aio_cv;
  std::vector<AioOp> aio_pending FERRY_GUARDED_BY(aio_mu);
  uint32_t aio_drainers FERRY_GUARDED_BY(aio_mu) = 0;  // workers serving this file's queue
  uint32_t aio_starting FERRY_GUARDED_BY(aio_mu) = 0;  // ... of which not yet taken a batch
  // Page reads are answered in the order XrdXrootd issued them (completion_order.h says why).
  CompletionOrder pg_order;
};

// Closes an origin handle without waiting for the origin (a WAN round trip the client's close
// need not pay): its extra channels, then channel 0; released on a worker once XrdCl answered.
void CloseOrigin(std::shared_ptr<plugin::XrdOrigin> origin, uint16_t timeout);

// FERRY_LOG=debug in xrootd's environment: vector-read service times (and read-ahead's
// decisions, logged by the cache engine) in xrootd's log (its stderr), with the wall-clock time.
bool Debug();
__attribute__((format(printf, 1, 2))) void DebugLog(const char* format, ...);

}  // namespace ferry::proxy
