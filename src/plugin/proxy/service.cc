#include "plugin/proxy/service.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "base/fd.h"
#include "base/json_writer.h"
#include "base/strings.h"
#include "cache/dir_access.h"
#include "plugin/proxy/file_state.h"
#include "readahead/prefetcher.h"
#include "replica/hooks.h"

namespace ferry::proxy {
namespace {

Mutex g_mu;
ProxyService* g_service FERRY_GUARDED_BY(g_mu) = nullptr;  // leaked on purpose (see service.h)

constexpr std::string_view kSyntheticPrefix = "ferryc";

}  // namespace

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<ProxyService*> ProxyService::Start(const ProxyConfig& config) {
  MutexLock lock(g_mu);
  if (g_service != nullptr) {
    return g_service;
  }
  auto* s = new ProxyService(config);
  cache::Config cache_config = config.cache;
  cache_config.replica_hooks = replica::Hooks();
  auto disks = DiskSet::Create(cache_config, config.data_dirs,
                               {config.disk_high, config.disk_low, config.disk_retry_s});
  if (!disks) {
    delete s;
    return std::move(disks).error();
  }
  s->disks_ = std::move(*disks);
  // cmsd loads the same storage plug-in for its existence checks (Stat) in a cluster: only the
  // xrootd that serves clients keeps the status file.
  s->serving_ = std::string_view(program_invocation_short_name) != "cmsd";
  if (s->serving_) {
    s->status_thread_ = std::thread([s] { s->StatusLoop(); });
  }
  g_service = s;
  // Exit handlers run in reverse order of registration: this one runs before the static
  // destructors XrdCl registered when it was loaded, so queued pages are stored while XrdCl
  // (and everything else) still works.
  const int rc = std::atexit([] {
    if (ProxyService* svc = Get()) {
      svc->AtExit();
    }
  });
  if (rc != 0) {
    std::fprintf(stderr,
                 "ferry proxy: cannot register the exit handler: pages queued at exit "
                 "will not be stored\n");
  }
  return s;
}

ProxyService* ProxyService::Get() {
  MutexLock lock(g_mu);
  return g_service;
}

ProxyService::ProxyService(const ProxyConfig& config)
    : config_(config),
      pool_(std::make_unique<plugin::WorkerPool>(config.cache.workers)),
      copy_budget_(config.copy_memory),
      idle_origins_(std::make_unique<IdlePool<plugin::XrdOrigin>>(
          config.origin_idle_max,
          config.origin_idle_ms,
          [timeout = config.timeout_s](std::shared_ptr<plugin::XrdOrigin> origin) {
            CloseOrigin(std::move(origin), timeout);
          })),
      started_unix_(UnixNow()) {
  for (const std::string& origin : config.Origins()) {
    gates_.emplace(origin, std::make_unique<OriginGate>(origin, config.origin_inflight,
                                                        config.origin_wait_ms));
  }
}

int64_t ProxyService::SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ProxyService::AtExit() {
  // Idle origin handles are closed while their closes can still be released normally.
  idle_origins_->CloseAll();
  exiting_ = true;
  {
    MutexLock lock(loop_mu_);
    stop_ = true;
  }
  loop_cv_.NotifyAll();
  if (status_thread_.joinable()) {
    status_thread_.join();
  }
  disks_->Shutdown();
  WriteStatus();
}

std::string ProxyService::NextSyntheticUser() {
  const uint64_t n = next_user_.fetch_add(1, std::memory_order_relaxed) % config_.redirect_users;
  return std::string(kSyntheticPrefix) + std::to_string(n);
}

bool ProxyService::IsSyntheticUser(std::string_view user) {
  return user.size() > kSyntheticPrefix.size()
         && user.compare(0, kSyntheticPrefix.size(), kSyntheticPrefix) == 0;
}

void ProxyService::OnPrefetch(uint64_t bytes, uint64_t requests) {
  prefetched_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  prefetch_requests_.fetch_add(requests, std::memory_order_relaxed);
}

void ProxyService::Record(const AccessRecord& r) {
  if (!config_.access_log) {
    return;
  }
  if (!AppendAccessRecord(config_.cache.dir, r)) {
    records_failed_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ProxyService::WriteStatus() {
  if (!serving_) {
    return;
  }
  const MeterSnapshot m = meter_.Snapshot();
  JsonWriter w;
  w.BeginObject().Field("pid", static_cast<int64_t>(::getpid())).Field("origin", config_.origin);
  w.Field("started_unix", started_unix_).Field("updated_unix", UnixNow());
  w.Field("open_files", open_files_.load()).Field("opens", opens_.load());
  w.Field("redirects", redirects_.load());
  w.Field("origin_requests", m.requests).Field("origin_inflight", m.inflight);
  w.Field("origin_max_inflight", m.max_inflight);
  w.Field("origin_inflight_seconds", m.inflight_seconds);
  w.Field("origin_busy_seconds", m.busy_seconds);
  w.Field("prefetched_bytes", prefetched_bytes_.load());
  w.Field("prefetch_requests", prefetch_requests_.load());
  w.Field("origin_opens", origin_opens_.load());
  w.Field("origin_handles_reused", idle_origins_->reused());
  w.Field("origin_handles_idle", static_cast<uint64_t>(idle_origins_->idle()));
  w.Field("records_failed", records_failed_.load());
  w.Field("copies_detected", copy_counters_.copies.load());
  w.Field("copy_bytes_through", copy_counters_.bytes_through.load());
  w.Field("copy_memory_bytes", copy_budget_.held());
  w.Field("copy_memory_peak_bytes", copy_budget_.peak());
  w.Field("copy_memory_limit_bytes", copy_budget_.limit());
  w.Field("copy_memory_refused", copy_budget_.refused());
  const readahead::Prefetcher* ahead = disks_->prefetcher();
  w.Field("writeback_idle", int64_t{disks_->WritebackIdle() ? 1 : 0});
  w.Field("writeback_queued_bytes", disks_->WritebackQueuedBytes());
  w.Field("readahead_queued", static_cast<uint64_t>(ahead != nullptr ? ahead->queued() : 0));
  w.Field("zero_copy_bytes", zero_copy_bytes_.load());
  w.Field("zero_copy_reads", zero_copy_reads_.load());
  w.Field("zero_copy_declined", zero_copy_declined_.load());
  w.Field("status_request", status_request_.load());
  w.Key("origins").BeginArray();
  for (const auto& [origin, gate] : gates_) {
    const GateCounts g = gate->Counts();
    w.BeginObject().Field("origin", origin).Field("in_flight", g.in_flight);
    w.Field("max_in_flight", g.max_in_flight).Field("waited", g.waited);
    w.Field("turned_away", g.turned_away).Field("unanswered", g.unanswered).EndObject();
  }
  w.EndArray();
  WriteDisks(w);
  w.EndObject();
  std::string text = w.Take();
  text += '\n';
  MutexLock lock(status_mu_);
  // Written beside and renamed: a reader (ferry cache stats) never sees half a file.
  const std::string path = config_.cache.dir + "/proxy-status.json";
  const std::string tmp = path + ".tmp";
  auto opened = cache::OpenCacheFile(tmp, O_WRONLY | O_TRUNC);
  if (!opened) {
    return;
  }
  Fd fd = std::move(*opened);
  const bool ok = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (fd.Close() && ok) {
    (void)::rename(tmp.c_str(), path.c_str());
  }
}

void ProxyService::WriteDisks(JsonWriter& w) {
  const std::vector<DiskInfo> disks = disks_->Snapshot();
  w.Field("disks_up", static_cast<uint64_t>(disks_->up()));
  w.Key("disks").BeginArray();
  for (const DiskInfo& d : disks) {
    w.BeginObject().Field("dir", d.dir).Field("up", int64_t{d.up ? 1 : 0});
    w.Field("reason", d.reason).Field("faults", d.faults).Field("outages", d.outages);
    w.Field("open", d.open).Field("placed", d.placed).Field("free_bytes", d.free_bytes);
    w.Field("free_inodes", d.free_inodes).Field("down_since_unix", d.down_since_unix);
    w.Field("writeback_queued_bytes", d.writeback_queued_bytes).EndObject();
  }
  w.EndArray();
}

ProxyService::LoopState ProxyService::CurrentLoopState(size_t idle_origins) {
  const MeterSnapshot m = meter_.Snapshot();
  const readahead::Prefetcher* ahead = disks_->prefetcher();
  LoopState s;
  s.requests = m.requests;
  s.opens = opens_.load();
  s.inflight = m.inflight;
  s.open_files = open_files_.load();
  s.idle_origins = idle_origins;
  s.writeback_idle = disks_->WritebackIdle();
  s.readahead_queued = ahead != nullptr ? ahead->queued() : 0;
  s.disks_generation = disks_->generation();
  return s;
}

uint64_t ProxyService::StatusRequest() const {
  auto fd = Fd::Open(config_.cache.dir + "/proxy-status.want", O_RDONLY);
  if (!fd) {
    return 0;
  }
  char buf[32];
  const ssize_t n = ::read(fd->get(), buf, sizeof buf);
  std::string_view text(buf, n > 0 ? static_cast<size_t>(n) : 0);
  text = text.substr(0, text.find_first_of(" \t\r\n"));
  auto v = ParseUint(text);
  return v ? *v : 0;
}

void ProxyService::StatusLoop() {
  LoopState last;
  MutexLock lock(loop_mu_);
  while (!stop_) {
    lock.Unlock();
    disks_->Check();
    // Idle origin handles past ferry.origin_idle_ms are closed here, within status_ms.
    const LoopState now = CurrentLoopState(idle_origins_->Sweep(SteadyMs()));
    const uint64_t asked = StatusRequest();
    // Only while something changes: an idle proxy does not touch its disk. Closes count as a
    // change (a status that still shows the storm's last open files would be wrong for good).
    if (now != last || now.inflight > 0 || asked != 0) {
      last = now;
      if (asked != 0) {
        status_request_ = asked;
      }
      WriteStatus();
      if (asked != 0) {
        (void)::unlink((config_.cache.dir + "/proxy-status.want").c_str());
      }
    }
    lock.Lock();
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.status_ms);
    while (!stop_ && loop_cv_.WaitUntil(loop_mu_, deadline)) {
    }
  }
}

}  // namespace ferry::proxy
