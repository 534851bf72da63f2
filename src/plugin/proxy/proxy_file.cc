#include "plugin/proxy/proxy_file.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <XrdCl/XrdClFile.hh>
#include <XrdOuc/XrdOucEnv.hh>

#include "cache/access_log.h"
#include "cache/cache.h"
#include "plugin/proxy/ahead_scheduler.h"
#include "plugin/proxy/origin_meter.h"
#include "plugin/proxy/read_ahead.h"
#include "plugin/proxy/service.h"
#include "plugin/xrdcl/xrd_origin.h"
#include "rootio/root_file.h"
#include "rootio/tree.h"

#include <XrdSfs/XrdSfsAio.hh>

namespace ferry::proxy {

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
  std::unique_ptr<ReadAhead> ahead;
  std::unique_ptr<cache::CachedFile> ahead_file;
  std::vector<fetch::Range> ahead_early;  // vector reads that came while the trees loaded
  uint32_t ahead_running = 0;             // a tree load or fetches using ahead_file now
  bool closing = false;
  std::atomic<bool> ahead_decided{false};  // ahead_state left kUnknown (a lock-free check)
  std::atomic<bool> header_read{false};    // a client read the file's first bytes
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

namespace {

// FERRY_PROXY_DEBUG=1 in xrootd's environment: read-ahead decisions on stderr (xrootd's log),
// with the wall-clock time.
bool Debug() {
  static const bool on = std::getenv("FERRY_PROXY_DEBUG") != nullptr;  // NOLINT
  return on;
}

__attribute__((format(printf, 1, 2))) void DebugLog(const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  std::fprintf(stderr, "ferry proxy: %.3f %s\n", UnixNow(), line);
}

// Read-ahead fetches are not made smaller than this (a client reading a few small baskets at a
// time would otherwise cost one origin request per basket).
constexpr uint64_t kMinAheadFetchBytes = 256 << 10;

// Reused by the reads of one xrootd thread, so that hits allocate nothing once warm.
thread_local std::vector<io::ReadRequest> tls_requests;

int ToErrno(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kNotFound:
      return ENOENT;
    case ErrorCode::kPermission:
      return EACCES;
    case ErrorCode::kTimeout:
      return ETIMEDOUT;
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

// Number of 4 KiB pgread segments of [offset, offset + length).
size_t SegmentCount(uint64_t offset, uint64_t length) {
  if (length == 0) {
    return 0;
  }
  return static_cast<size_t>((offset + length - 1) / 4096 - offset / 4096 + 1);
}

// Reads `requests` (each inside the file) through the cache and does the file's accounting.
Status ReadThrough(FileState& s, std::span<io::ReadRequest> requests) {
  uint64_t bytes = 0;
  for (const io::ReadRequest& r : requests) {
    bytes += r.dest.size();
  }
  const bool bypass = s.cached->pass_through();
  Status st = s.cached->ReadV(requests);
  s.reads.fetch_add(1, std::memory_order_relaxed);
  if (st) {
    s.bytes_read.fetch_add(bytes, std::memory_order_relaxed);
    if (bypass) {
      s.bytes_bypassed.fetch_add(bytes, std::memory_order_relaxed);
    }
  }
  return st;
}

// Closes an origin file without waiting for the origin (a WAN round trip the client's close
// need not pay); the handler keeps the XrdOrigin alive until XrdCl is done with it.
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

// Serves a batch of asynchronous reads with one CachedFile::ReadV and completes each.
void MaybeLoadAhead(const std::shared_ptr<FileState>& s, std::span<const io::ReadRequest> reqs);

void ServeAio(const std::shared_ptr<FileState>& state, std::vector<AioOp>& batch) {
  FileState& s = *state;
  const uint64_t size = s.cached->size();
  std::vector<io::ReadRequest> requests;
  std::vector<long> index(batch.size(), -1);
  requests.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const aiocb& cb = batch[i].aio->sfsAio;
    const uint64_t off = static_cast<uint64_t>(cb.aio_offset);
    const uint64_t n = Clip(size, off, cb.aio_nbytes);
    if (n > 0) {
      index[i] = static_cast<long>(requests.size());
      requests.push_back({off, {static_cast<uint8_t*>(const_cast<void*>(cb.aio_buf)), n}, {}});
    }
  }
  if (!requests.empty()) {
    MaybeLoadAhead(state, requests);
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
          s.cached->SegmentCrcs(r.offset, r.dest,
                                {aio->cksVec, SegmentCount(r.offset, r.dest.size())});
        }
      }
    }
    aio->doneRead();
  }
}

// A ByteSource over a cache handle, for rootio to read the file's trees through the cache.
class CachedSource final : public io::ByteSource {
 public:
  CachedSource(cache::CachedFile& file, std::string name) : file_(file), name_(std::move(name)) {}
  uint64_t size() const override { return file_.size(); }
  const std::string& name() const override { return name_; }

 protected:
  Status DoReadAt(uint64_t offset, std::span<uint8_t> dest) override {
    return file_.Read(offset, dest);
  }
  void DoReadV(std::span<io::ReadRequest> requests) override { (void)file_.ReadV(requests); }

 private:
  cache::CachedFile& file_;
  std::string name_;
};

// Every TTree of a ROOT file (their baskets are what ReadAhead predicts).
Result<std::vector<rootio::TreeInfo>> LoadTrees(cache::CachedFile& file, const std::string& name) {
  CachedSource source(file, name);
  auto root = FERRY_TRY(rootio::RootFile::Open(source));
  std::vector<rootio::TreeInfo> trees;
  for (const std::string& path : FERRY_TRY(root->TreePaths())) {
    if (auto tree = root->OpenTree(path)) {
      trees.push_back((*tree)->info());
    }
  }
  return trees;
}

// Fetches predicted baskets into the cache (through the read-ahead handle; the copy into a
// scratch buffer is the price of reusing the client read path with its joins and retries).
void FetchAhead(const std::shared_ptr<FileState>& s, std::vector<fetch::Range> ranges) {
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
void RunAhead(const std::shared_ptr<FileState>& s, std::vector<fetch::Range> ranges) {
  {
    std::lock_guard<std::mutex> lock(s->ahead_mu);
    if (s->closing) {
      return;
    }
    ++s->ahead_running;
  }
  FetchAhead(s, std::move(ranges));
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
    s.service.scheduler().Submit(priority, [state, group = std::move(group)]() mutable {
      RunAhead(state, std::move(group));
    });
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
  for (auto& [tree, branches] : learned) {
    s->service.branches().Learn(s->client + "\n" + tree, std::move(branches));
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
    QueueAhead(s, ahead, bytes / kSeedClusters, AheadScheduler::Priority::kLater);
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
    std::unique_ptr<ReadAhead> ahead;
    if (auto file = s->service.cache().Open(s->url, s->metered)) {
      handle = std::move(*file);
      if (auto trees = LoadTrees(*handle, s->path); trees && !trees->empty()) {
        ahead = std::make_unique<ReadAhead>(std::move(*trees), units);
      }
    }
    bool on = false;
    if (Debug()) {
      DebugLog("read-ahead for %s: %s (%zu baskets)", s->path.c_str(), ahead ? "on" : "off",
               ahead ? ahead->baskets() : 0);
    }
    {
      std::lock_guard<std::mutex> done(s->ahead_mu);
      s->ahead_file = std::move(handle);
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

// At most this many workers serve one file's asynchronous reads at once (XrdXrootd keeps at
// most 8 in flight per link).
constexpr uint32_t kMaxDrainers = 8;

void DrainAio(const std::shared_ptr<FileState>& s) {
  std::vector<AioOp> batch;
  for (bool first = true;; first = false) {
    {
      std::lock_guard<std::mutex> lock(s->aio_mu);
      if (first) {
        --s->aio_starting;
      }
      if (s->aio_pending.empty()) {
        --s->aio_drainers;
        s->aio_cv.notify_all();
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
    std::lock_guard<std::mutex> lock(s->aio_mu);
    s->aio_pending.push_back({aio, pg});
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

int ProxyFile::Open(const char* path, int oflag, mode_t /*mode*/, XrdOucEnv& /*env*/) {
  if ((oflag & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0) {
    return -EROFS;
  }
  FileState& s = *state_;
  if (s.cached) {
    return -EBADF;  // already open
  }
  s.path = path;
  s.user = UserOf(tident);
  s.client = HostOf(tident);
  s.open_unix = UnixNow();
  const ProxyConfig& config = service_.config();
  const std::string url = config.OriginUrl(path);
  // The origin's CGI is not forwarded: cached bytes are shared by every client of the proxy.
  auto origin = std::make_shared<plugin::XrdOrigin>(
      url, XrdCl::OpenFlags::Read, XrdCl::Access::None, config.timeout_s, config.cache.channels,
      &service_.pool(), service_.exiting());
  auto metered = std::make_shared<MeteredOrigin>(origin, service_.meter());
  auto file = service_.cache().Open(url, metered);
  if (!file) {
    CloseOrigin(std::move(origin), config.timeout_s);
    return -ToErrno(file.error());
  }
  s.cached = std::move(*file);
  s.origin = std::move(origin);
  s.metered = std::move(metered);
  s.url = url;
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
  MaybeLoadAhead(state_, {&r, 1});
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
  // The next vector reads' baskets start on their way before this one is served.
  MaybeLoadAhead(state_, reqs);
  ReadAheadOf(state_, reqs);
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
    state_->cached->SegmentCrcs(off, {static_cast<const uint8_t*>(buffer), len},
                                {csvec, SegmentCount(off, len)});
  }
  return n;
}

int ProxyFile::Close(long long* retsz) {
  std::shared_ptr<FileState> s = state_;
  if (!s->cached) {
    return -EBADF;
  }
  {
    // Queued asynchronous reads still write into XrdXrootd's buffers: finish them first.
    std::unique_lock<std::mutex> lock(s->aio_mu);
    s->aio_cv.wait(lock, [&] { return s->aio_drainers == 0; });
  }
  {
    // Read-ahead stops: queued fetches are dropped, running ones (one origin round trip each)
    // end before the origin file is closed under them.
    std::unique_lock<std::mutex> lock(s->ahead_mu);
    s->closing = true;
    s->ahead_cv.wait(lock, [&] { return s->ahead_running == 0; });
    if (s->ahead_file) {
      // What read-ahead fetched for this file is its own handle's origin traffic.
      const cache::HandleCounters& h = s->ahead_file->handle_counters();
      s->bytes_prefetched = h.bytes_from_origin.load();
      s->prefetch_requests = h.origin_requests.load();
      s->service.OnPrefetch(s->bytes_prefetched, s->prefetch_requests);
      s->ahead_file->Close();
      s->ahead_file.reset();
    }
  }
  const cache::HandleCounters& h = s->cached->handle_counters();
  cache::AccessRecord r;
  r.path = s->path;
  r.user = s->user;
  r.size = s->cached->size();
  r.open_unix = s->open_unix;
  r.reads = s->reads.load();
  r.bytes_read = s->bytes_read.load();
  r.bytes_hit = std::min(h.bytes_from_cache.load(), r.bytes_read);
  r.bytes_bypassed = s->bytes_bypassed.load();
  r.bytes_missed = r.bytes_read - std::min(r.bytes_read, r.bytes_hit + r.bytes_bypassed);
  r.bytes_prefetched = s->bytes_prefetched.load();
  r.origin_bytes = h.bytes_from_origin.load() + r.bytes_prefetched;
  r.origin_requests = h.origin_requests.load() + s->prefetch_requests.load();
  if (retsz != nullptr) {
    *retsz = static_cast<long long>(r.size);
  }
  s->cached->Close();
  s->cached.reset();
  CloseOrigin(std::move(s->origin), service_.config().timeout_s);
  r.close_unix = UnixNow();
  service_.Record(r);
  service_.OnClose();
  return XrdOssOK;
}

}  // namespace ferry::proxy
