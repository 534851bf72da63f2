// ProxyService: the process-wide state of ferry's site proxy inside an xrootd server — its
// settings, the cache engine of each of its disks (disk_set.h: the same page store and
// read-ahead as the client cache), the worker threads of asynchronous reads, the origin meter,
// the access log, and the status file DIR/proxy-status.json (DIR: the first disk, ferry.dir;
// rewritten every ferry.status_ms, 1 s, while it changes):
//
//   {"pid":N,"origin":"H:P","started_unix":T,"updated_unix":T,"open_files":N,"opens":N,
//    "redirects":N,"origin_requests":N,"origin_inflight":N,"origin_max_inflight":N,
//    "origin_inflight_seconds":X,"origin_busy_seconds":X,"prefetched_bytes":N,
//    "prefetch_requests":N,"origin_opens":N,"origin_handles_reused":N,
//    "origin_handles_idle":N,"copies_detected":N,"copy_bytes_through":N,"copy_memory_bytes":N,
//    "copy_memory_peak_bytes":N,"copy_memory_limit_bytes":N,"copy_memory_refused":N,
//    "writeback_idle":0|1,
//    "writeback_queued_bytes":N,"readahead_queued":N,"zero_copy_bytes":N,"zero_copy_reads":N,
//    "zero_copy_declined":N,"status_request":N,"origins":[{"origin":"H:P","in_flight":N,
//    "max_in_flight":N,"waited":N,"turned_away":N,"unanswered":N},...],"disks_up":N,
//    "disks":[{"dir":D,"up":0|1,"reason":"...","faults":N,"outages":N,"open":N,"placed":N,
//    "free_bytes":N,"free_inodes":N,"down_since_unix":T,"writeback_queued_bytes":N},...]}
//
// The status loop also runs the disks' health check and the retries of those out of service
// (DiskSet::Check), and a disk leaving or re-entering service rewrites the status.
//
// Settled: writeback_idle 1 (the cache's write-behind has stored and published everything it
// was given, WriteBehind::idle), no origin request in flight, no read-ahead queued. A program
// that must know the current state (tests before a warm pass) writes a number N to
// DIR/proxy-status.want; within status_ms the status is rewritten with "status_request":N and
// the request file removed, and every later rewrite keeps N.
//
// Lifetime: created once by the library's entry point (Start) and never destroyed: xrootd has
// no orderly plug-in shutdown, and XrdCl objects must not be destroyed after XrdCl finalised
// itself. An exit handler stores and publishes what the cache has queued, merges its counters
// and writes the status file a last time.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "base/result.h"
#include "cache/cache.h"
#include "plugin/proxy/access_log.h"
#include "plugin/proxy/copy_through.h"
#include "plugin/proxy/disk_set.h"
#include "plugin/proxy/idle_pool.h"
#include "plugin/proxy/origin_gate.h"
#include "plugin/proxy/origin_meter.h"
#include "plugin/proxy/proxy_config.h"
#include "plugin/xrdcl/worker_pool.h"

namespace ferry {
class JsonWriter;
}  // namespace ferry

namespace ferry::plugin {
class XrdOrigin;
}  // namespace ferry::plugin

namespace ferry::proxy {

class ProxyService {
 public:
  // Starts the service of this process; later calls return it (their config is ignored).
  // Errors: a cache directory cannot be prepared (the proxy then refuses to start).
  static Result<ProxyService*> Start(const ProxyConfig& config);
  // The started service, or nullptr.
  static ProxyService* Get();

  ProxyService(const ProxyService&) = delete;
  ProxyService& operator=(const ProxyService&) = delete;
  ~ProxyService() = default;

  const ProxyConfig& config() const { return config_; }
  // The cache disks (ferry.dir first, then ferry.data_dirs).
  DiskSet& disks() { return *disks_; }
  // Workers of asynchronous client reads and deferred releases.
  plugin::WorkerPool& pool() { return *pool_; }
  // Set at process exit: XrdCl objects must not be released any more.
  const std::atomic<bool>* exiting() const { return &exiting_; }
  OriginMeter& meter() { return meter_; }
  // The gate of the origin a path is read from (origin_gate.h).
  OriginGate& gate_for(std::string_view path) { return *gates_.at(config_.OriginOf(path)); }

  // Origin handles of closed files, kept open for the next open of the same URL within
  // ferry.origin_idle_ms (idle_pool.h); swept by the status thread, closed at exit.
  IdlePool<plugin::XrdOrigin>& idle_origins() { return *idle_origins_; }
  // Whole-file copies served through (copy_through.h).
  CopyCounters& copy_counters() { return copy_counters_; }
  // The memory all copies served through share (ferry.copy_memory, copy_budget.h).
  CopyBudget& copy_budget() { return copy_budget_; }
  // Counts the opens every origin handle sends (XrdOrigin::CountOpensIn).
  std::atomic<uint64_t>* origin_opens() { return &origin_opens_; }
  // Milliseconds of the monotonic clock (the idle pool's time).
  static int64_t SteadyMs();

  // Synthetic user for the next self-redirect: "ferryc<N>", N cycling through redirect_users.
  std::string NextSyntheticUser();
  // True for a client login name handed out by NextSyntheticUser.
  static bool IsSyntheticUser(std::string_view user);

  void OnOpen() { opens_.fetch_add(1, std::memory_order_relaxed), open_files_.fetch_add(1); }
  void OnClose() { open_files_.fetch_sub(1); }
  void OnRedirect() { redirects_.fetch_add(1, std::memory_order_relaxed); }
  // A closed file's read-ahead traffic (its handle's prefetch counters).
  void OnPrefetch(uint64_t bytes, uint64_t requests);
  // Zero-copy serving (zero_copy.h): a read sent from the cache's data file, and one declined
  // (read the normal way).
  void OnZeroCopy(uint64_t bytes) {
    zero_copy_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    zero_copy_reads_.fetch_add(1, std::memory_order_relaxed);
  }
  void OnZeroCopyDeclined() { zero_copy_declined_.fetch_add(1, std::memory_order_relaxed); }
  // Appends an access record (when enabled); failures are counted, not reported.
  void Record(const AccessRecord& r);

  // Writes the status file now (also done every status_ms while something changed).
  void WriteStatus();

 private:
  // What the status loop compares to decide whether to rewrite the status file.
  struct LoopState {
    uint64_t requests = UINT64_MAX;
    uint64_t opens = UINT64_MAX;
    uint64_t inflight = UINT64_MAX;
    int64_t open_files = -1;
    size_t idle_origins = SIZE_MAX;
    bool writeback_idle = false;
    size_t readahead_queued = SIZE_MAX;
    uint64_t disks_generation = UINT64_MAX;
    bool operator==(const LoopState&) const = default;
  };

  explicit ProxyService(const ProxyConfig& config);
  LoopState CurrentLoopState(size_t idle_origins);
  // The number in DIR/proxy-status.want (0 when absent or not a number).
  uint64_t StatusRequest() const;
  void StatusLoop();
  // The "disks_up" and "disks" fields of the status.
  void WriteDisks(JsonWriter& w);
  void AtExit();

  const ProxyConfig config_;
  std::unique_ptr<DiskSet> disks_;
  std::unique_ptr<plugin::WorkerPool> pool_;
  OriginMeter meter_;
  std::map<std::string, std::unique_ptr<OriginGate>> gates_;  // by host:port; fixed after start
  std::atomic<bool> exiting_{false};
  std::atomic<uint64_t> next_user_{0};
  std::atomic<uint64_t> opens_{0};
  std::atomic<int64_t> open_files_{0};
  std::atomic<uint64_t> redirects_{0};
  std::atomic<uint64_t> prefetched_bytes_{0};
  std::atomic<uint64_t> prefetch_requests_{0};
  std::atomic<uint64_t> records_failed_{0};
  std::atomic<uint64_t> zero_copy_bytes_{0};
  std::atomic<uint64_t> zero_copy_reads_{0};
  std::atomic<uint64_t> zero_copy_declined_{0};
  std::atomic<uint64_t> origin_opens_{0};
  CopyCounters copy_counters_;
  CopyBudget copy_budget_;
  std::atomic<uint64_t> status_request_{0};  // the last DIR/proxy-status.want answered
  std::unique_ptr<IdlePool<plugin::XrdOrigin>> idle_origins_;
  double started_unix_ = 0;
  bool serving_ = true;  // false inside cmsd

  Mutex status_mu_;  // one writer of the status file at a time
  Mutex loop_mu_;
  CondVar loop_cv_;
  bool stop_ FERRY_GUARDED_BY(loop_mu_) = false;
  std::thread status_thread_;
};

// Wall-clock time in seconds since the epoch.
double UnixNow();

}  // namespace ferry::proxy
