#include "plugin/proxy/proxy_file.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <XrdCl/XrdClFile.hh>
#include <XrdOuc/XrdOucEnv.hh>

#include "base/log.h"
#include "cache/cache.h"
#include "plugin/proxy/access_log.h"
#include "plugin/proxy/cached_only.h"
#include "plugin/proxy/file_state.h"
#include "plugin/proxy/origin_gate.h"
#include "plugin/proxy/origin_meter.h"
#include "plugin/proxy/oss_errno.h"
#include "plugin/proxy/segment_crcs.h"
#include "plugin/proxy/service.h"
#include "plugin/proxy/zero_copy.h"
#include "plugin/xrdcl/xrd_origin.h"

#include <XrdSfs/XrdSfsAio.hh>

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
  // The wall-clock time lets a vector read be matched with the origin's log.
  log::Printf(log::Level::kDebug, "proxy", "%.3f %s", UnixNow(), line);
}

namespace {

// Reused by the reads of one xrootd thread, so that hits allocate nothing once warm.
thread_local std::vector<io::ReadRequest> tls_requests;

int ToErrno(const Error& e) {
  if (IsNotCached(e)) {
    return ENODATA;
  }
  if (IsOriginStalled(e)) {
    return kOriginTimedOutErrno;
  }
  switch (e.code()) {
    case ErrorCode::kNotFound:
      return ENOENT;
    case ErrorCode::kPermission:
      return EACCES;
    case ErrorCode::kTimeout:
      return kOriginTimedOutErrno;  // never ETIMEDOUT: oss_errno.h
    case ErrorCode::kInvalidArgument:
      return EINVAL;
    case ErrorCode::kNoSpace:
      return ENOSPC;
    default:
      // kRemote carries XRootD's own error number, not an errno: report a plain I/O error.
      return EIO;
  }
}

// The login name and the host of a trace identifier "user.pid:fd@host".
std::string UserOf(const char* tident) {
  std::string t = tident != nullptr ? tident : "";
  const size_t dot = t.find_first_of(".:@");
  return dot == std::string::npos ? t : t.substr(0, dot);
}
std::string HostOf(const char* tident) {
  std::string t = tident != nullptr ? tident : "";
  const size_t at = t.rfind('@');
  return at == std::string::npos ? "" : t.substr(at + 1);
}

uint64_t Clip(uint64_t size, uint64_t offset, uint64_t length) {
  return offset >= size ? 0 : std::min(length, size - offset);
}

// Reads `requests` (each inside the file) through the cache and does the file's accounting.
Status ReadThrough(FileState& s, std::span<io::ReadRequest> requests) {
  uint64_t bytes = 0;
  for (const io::ReadRequest& r : requests) {
    bytes += r.dest.size();
  }
  const bool bypass = s.cached->pass_through();
  s.reads.fetch_add(1, std::memory_order_relaxed);
  // Checked before the read, not left to the handle's origin: a miss would otherwise start a
  // fetch that other handles of the entry could join, and they would get its error.
  if (s.only_if_cached && !s.cached->AllHeld(requests)) {
    return FailNotCached(requests);
  }
  // A whole-file copy is served through, cached only up to copy_cache_fraction.
  uint64_t through = 0;
  Status st = s.copy ? s.copy->Read(*s.cached, requests, through) : s.cached->ReadV(requests);
  if (st) {
    s.bytes_read.fetch_add(bytes, std::memory_order_relaxed);
    s.bytes_bypassed.fetch_add(bypass ? bytes : through, std::memory_order_relaxed);
  }
  return st;
}

// The handler of CloseOrigin: keeps the XrdOrigin alive until XrdCl is done with it.
class OriginCloser final : public XrdCl::ResponseHandler {
 public:
  explicit OriginCloser(std::shared_ptr<plugin::XrdOrigin> origin) : origin_(std::move(origin)) {}
  void HandleResponse(XrdCl::XRootDStatus* status, XrdCl::AnyObject* response) override {
    delete status;
    delete response;
    plugin::XrdOrigin::ReleaseLater(std::move(origin_));
    delete this;
  }

 private:
  std::shared_ptr<plugin::XrdOrigin> origin_;
};

}  // namespace

void CloseOrigin(std::shared_ptr<plugin::XrdOrigin> origin, uint16_t timeout) {
  origin->CloseExtraChannels();
  if (!origin->is_open()) {
    plugin::XrdOrigin::ReleaseLater(std::move(origin));
    return;
  }
  XrdCl::File& file = origin->inner();
  auto* handler = new OriginCloser(origin);
  if (!file.Close(handler, timeout).IsOK()) {
    delete handler;  // not issued: release it here
    plugin::XrdOrigin::ReleaseLater(std::move(origin));
  }
}

namespace {

// Serves a batch of asynchronous reads with one CachedFile::ReadV and completes each.
void ServeAio(const std::shared_ptr<FileState>& state, std::vector<AioOp>& batch) {
  FileState& s = *state;
  const uint64_t size = s.cached->size();
  std::vector<io::ReadRequest> requests;
  std::vector<long> index(batch.size(), -1);
  requests.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const aiocb& cb = batch[i].aio->sfsAio;
    const auto off = static_cast<uint64_t>(cb.aio_offset);
    const uint64_t n = Clip(size, off, cb.aio_nbytes);
    if (n > 0) {
      index[i] = static_cast<long>(requests.size());
      requests.push_back({off, {static_cast<uint8_t*>(const_cast<void*>(cb.aio_buf)), n}, {}});
    }
  }
  if (!requests.empty()) {
    (void)ReadThrough(s, requests);
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    XrdSfsAio* aio = batch[i].aio;
    if (index[i] < 0) {
      aio->Result = 0;  // at or past the end of the file
    } else {
      const io::ReadRequest& r = requests[static_cast<size_t>(index[i])];
      if (!r.status) {
        aio->Result = -ToErrno(r.status.error());
      } else {
        aio->Result = static_cast<ssize_t>(r.dest.size());
        if (batch[i].pg && aio->cksVec != nullptr) {
          SegmentCrcs(*s.cached, r.offset, r.dest,
                      {aio->cksVec, SegmentCount(r.offset, r.dest.size())});
        }
      }
    }
    if (batch[i].pg) {
      s.pg_order.Finish(batch[i].ticket, [aio] { aio->doneRead(); });
    } else {
      aio->doneRead();  // XrdXrootd sends a plain read's chunks in file order itself
    }
  }
}

// At most this many workers serve one file's asynchronous reads at once (XrdXrootd keeps at
// most 8 in flight per link).
constexpr uint32_t kMaxDrainers = 8;

void DrainAio(const std::shared_ptr<FileState>& s) {
  std::vector<AioOp> batch;
  for (bool first = true;; first = false) {
    {
      MutexLock lock(s->aio_mu);
      if (first) {
        --s->aio_starting;
      }
      if (s->aio_pending.empty()) {
        --s->aio_drainers;
        s->aio_cv.NotifyAll();
        return;
      }
      batch.swap(s->aio_pending);
    }
    ServeAio(s, batch);
    batch.clear();
  }
}

int QueueAio(const std::shared_ptr<FileState>& s, XrdSfsAio* aio, bool pg) {
  if (!s->cached) {
    return -EBADF;
  }
  bool start = false;
  {
    MutexLock lock(s->aio_mu);
    // Tickets are taken under aio_mu, so their order is the queue's, which is XrdXrootd's.
    s->aio_pending.push_back({aio, pg, pg ? s->pg_order.Take() : 0});
    // The segments of one request arrive together: the worker about to take a batch takes them
    // all (one cache read, one planned origin request). Segments that come while every worker
    // waits for the origin start another one, so requests of one file do not queue.
    start = s->aio_starting == 0 && s->aio_drainers < kMaxDrainers;
    if (start) {
      ++s->aio_drainers;
      ++s->aio_starting;
    }
  }
  if (start) {
    s->service.pool().Submit([s] { DrainAio(s); });
  }
  return 0;
}

}  // namespace

ProxyFile::ProxyFile(ProxyService& service, const char* trace_id)
    : XrdOssDF(trace_id, DF_isFile),
      service_(service),
      state_(std::make_shared<FileState>(service)) {}

ProxyFile::~ProxyFile() {
  if (state_->cached) {
    Close();
  }
}

std::shared_ptr<plugin::XrdOrigin> ProxyFile::OriginFor(const std::string& url) {
  const ProxyConfig& config = service_.config();
  // The origin handle is the proxy's own identity at the origin, never the client's, so one left
  // open by an earlier open of the same URL serves this one (no origin open: XrdHttp opens the
  // file for every GET); the cache checks it like a new one (a revalidating stat asks the
  // origin by path: MarkReused).
  std::shared_ptr<plugin::XrdOrigin> origin =
      service_.idle_origins().Take(url, ProxyService::SteadyMs());
  if (origin) {
    origin->MarkReused();
    return origin;
  }
  origin = std::make_shared<plugin::XrdOrigin>(url, XrdCl::OpenFlags::Read, XrdCl::Access::None,
                                               config.timeout_s, config.cache.channels,
                                               &service_.pool(), service_.exiting());
  origin->CountOpensIn(service_.origin_opens());
  return origin;
}

int ProxyFile::Open(const char* path, int oflag, mode_t /*mode*/, XrdOucEnv& env) {
  if ((oflag & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0) {
    return -EROFS;
  }
  FileState& s = *state_;
  if (s.cached) {
    return -EBADF;  // already open
  }
  s.path = path;
  s.user = UserOf(tident);
  s.open_unix = UnixNow();
  s.only_if_cached = OnlyIfCachedValue(env.Get(kOnlyIfCachedKey.data()));
  const ProxyConfig& config = service_.config();
  const std::string url = config.OriginUrl(path);
  // The origin's CGI is not forwarded: cached bytes are shared by every client of the proxy.
  // XrdOfs authorised this open before calling here.
  std::shared_ptr<plugin::XrdOrigin> origin = s.only_if_cached ? nullptr : OriginFor(url);
  std::shared_ptr<cache::Origin> metered;
  if (origin) {
    // Gated per origin (origin_gate.h): a stalled origin holds at most its own slots.
    metered = std::make_shared<MeteredOrigin>(
        std::make_shared<GatedOrigin>(origin, service_.gate_for(path)), service_.meter());
  } else {
    metered = std::make_shared<CachedOnlyOrigin>();
  }
  // Read-ahead is the cache engine's (readahead::FileAhead, as in the client plug-in), with
  // sequential read-ahead for copies, and the branches learned kept per client host: the next
  // files a client opens are seeded with what that client read, not what another one did.
  cache::OpenOptions options;
  options.read_ahead = config.lookahead > 0 && !s.only_if_cached;
  options.sequential_ahead = true;
  options.ahead_scope = HostOf(tident);
  options.zero_copy = true;
  auto file = service_.disks().Open(url, metered, options);
  if (!file) {
    if (origin) {
      CloseOrigin(std::move(origin), config.timeout_s);
    }
    return -ToErrno(file.error());
  }
  s.cached = std::move(file->file);
  s.disk = file->disk;
  if (origin && !s.cached->virtual_file()) {
    s.copy = CopyThrough::For(
        s.cached->size(), config.copy_cache_fraction, metered,
        [&pool = service_.pool()](std::function<void()> task) { pool.Submit(std::move(task)); },
        &service_.copy_counters(), &service_.copy_budget());
  }
  s.origin = std::move(origin);
  s.url = url;
  // A file the cache holds at least half of is read mostly from it: sendfile pays. One held
  // less keeps XrdXrootd's asynchronous reads for its misses (zero_copy.h).
  if (s.cached->held_bytes() >= s.cached->size() / 2 && s.cached->size() > 0) {
    zero_copy_token_ = RegisterZeroCopy(state_);
  }
  service_.OnOpen();
  return XrdOssOK;
}

int ProxyFile::Fstat(struct stat* buf) {
  const FileState& s = *state_;
  if (!s.cached) {
    return -EBADF;
  }
  std::memset(buf, 0, sizeof(*buf));
  buf->st_size = static_cast<off_t>(s.cached->size());
  buf->st_mtime = static_cast<time_t>(s.cached->mtime());
  buf->st_ctime = buf->st_mtime;
  buf->st_atime = buf->st_mtime;
  buf->st_mode = S_IFREG | 0644;
  buf->st_nlink = 1;
  buf->st_blksize = 4096;
  buf->st_blocks = static_cast<blkcnt_t>((s.cached->size() + 511) / 512);
  return XrdOssOK;
}

ssize_t ProxyFile::Read(off_t /*offset*/, size_t /*size*/) {
  return 0;
}

ssize_t ProxyFile::Read(void* buffer, off_t offset, size_t size) {
  FileState& s = *state_;
  if (!s.cached || offset < 0) {
    return s.cached ? -EINVAL : -EBADF;
  }
  const uint64_t n = Clip(s.cached->size(), static_cast<uint64_t>(offset), size);
  if (n == 0) {
    return 0;
  }
  io::ReadRequest r{static_cast<uint64_t>(offset), {static_cast<uint8_t*>(buffer), n}, {}};
  Status st = ReadThrough(s, {&r, 1});
  return st ? static_cast<ssize_t>(n) : -ToErrno(st.error());
}

ssize_t ProxyFile::ReadRaw(void* buffer, off_t offset, size_t size) {
  return Read(buffer, offset, size);
}

int ProxyFile::Read(XrdSfsAio* aiop) {
  return QueueAio(state_, aiop, /*pg=*/false);
}

int ProxyFile::pgRead(XrdSfsAio* aioparm, uint64_t /*opts*/) {
  return QueueAio(state_, aioparm, /*pg=*/true);
}

ssize_t ProxyFile::ReadV(XrdOucIOVec* readV, int rdvcnt) {
  FileState& s = *state_;
  if (!s.cached) {
    return -EBADF;
  }
  const uint64_t size = s.cached->size();
  std::vector<io::ReadRequest>& reqs = tls_requests;
  reqs.clear();
  ssize_t total = 0;
  for (int i = 0; i < rdvcnt; ++i) {
    const XrdOucIOVec& v = readV[i];
    if (v.offset < 0 || v.size < 0) {
      return -EINVAL;
    }
    // Like a local file's ReadV: a chunk past the end fails the whole request.
    if (Clip(size, static_cast<uint64_t>(v.offset), static_cast<uint64_t>(v.size))
        != static_cast<uint64_t>(v.size)) {
      return -ESPIPE;
    }
    if (v.size > 0) {
      reqs.push_back({static_cast<uint64_t>(v.offset),
                      {reinterpret_cast<uint8_t*>(v.data), static_cast<size_t>(v.size)},
                      {}});
    }
    total += v.size;
  }
  if (reqs.empty()) {
    return 0;
  }
  // The next vector reads' baskets start on their way before this one is served (the cache
  // engine's read-ahead, inside CachedFile::ReadV).
  const bool debug = Debug();
  const double t0 = debug ? UnixNow() : 0;
  const bool held = debug && s.cached->AllHeld(reqs);
  Status st = ReadThrough(s, reqs);
  if (debug) {
    DebugLog("%s: served vector read at %llu (%zu chunks, %s) in %.1f ms", s.path.c_str(),
             static_cast<unsigned long long>(reqs[0].offset), reqs.size(),
             held ? "held" : "missing", (UnixNow() - t0) * 1e3);
  }
  return st ? total : -ToErrno(st.error());
}

ssize_t ProxyFile::pgRead(
    void* buffer, off_t offset, size_t rdlen, uint32_t* csvec, uint64_t /*opts*/) {
  const ssize_t n = Read(buffer, offset, rdlen);
  if (n > 0 && csvec != nullptr) {
    const auto off = static_cast<uint64_t>(offset);
    const auto len = static_cast<size_t>(n);
    SegmentCrcs(*state_->cached, off, {static_cast<const uint8_t*>(buffer), len},
                {csvec, SegmentCount(off, len)});
  }
  return n;
}

int ProxyFile::Close(long long* retsz) {
  std::shared_ptr<FileState> s = state_;
  if (!s->cached) {
    return -EBADF;
  }
  if (zero_copy_token_ != -1) {
    ReleaseZeroCopy(zero_copy_token_);
    zero_copy_token_ = -1;
  }
  {
    // Queued asynchronous reads still write into XrdXrootd's buffers: finish them first.
    MutexLock lock(s->aio_mu);
    while (s->aio_drainers != 0) {
      s->aio_cv.Wait(s->aio_mu);
    }
  }
  // Read-ahead stops (its running fetches finish) before the origin file is closed under them.
  s->cached->Close();
  if (s->copy) {
    s->copy->Stop();
  }
  const cache::HandleCounters& h = s->cached->handle_counters();
  AccessRecord r;
  r.path = s->path;
  r.user = s->user;
  r.size = s->cached->size();
  r.open_unix = s->open_unix;
  r.reads = s->reads.load();
  r.bytes_read = s->bytes_read.load();
  r.bytes_hit = std::min(h.bytes_from_cache.load(), r.bytes_read);
  r.bytes_bypassed = s->bytes_bypassed.load();
  r.bytes_missed = r.bytes_read - std::min(r.bytes_read, r.bytes_hit + r.bytes_bypassed);
  // The handle's origin traffic includes what read-ahead fetched through it.
  r.bytes_prefetched = h.prefetch_bytes.load();
  r.origin_bytes = h.bytes_from_origin.load();
  r.origin_requests = h.origin_requests.load();
  if (s->copy) {
    r.origin_bytes += s->copy->stream().origin_bytes();
    r.origin_requests += s->copy->stream().origin_requests();
  }
  service_.OnPrefetch(r.bytes_prefetched, h.prefetch_requests.load());
  if (retsz != nullptr) {
    *retsz = static_cast<long long>(r.size);
  }
  s->cached.reset();
  s->copy.reset();
  service_.disks().Closed(s->disk);
  // No request of this file is in flight any more (its reads returned, aio and read-ahead
  // stopped): a handle without errors is kept for the next open of the URL, the others closed.
  std::shared_ptr<plugin::XrdOrigin> origin = std::move(s->origin);
  if (origin && origin->reusable() && !service_.exiting()->load()) {
    service_.idle_origins().Put(s->url, std::move(origin), ProxyService::SteadyMs());
  } else if (origin) {  // only-if-cached handles have none
    CloseOrigin(std::move(origin), service_.config().timeout_s);
  }
  r.close_unix = UnixNow();
  service_.Record(r);
  service_.OnClose();
  return XrdOssOK;
}

}  // namespace ferry::proxy
