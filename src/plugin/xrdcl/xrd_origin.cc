#include "plugin/xrdcl/xrd_origin.h"

#include <thread>

#include <XProtocol/XProtocol.hh>
#include <XrdCl/XrdClFileSystem.hh>
#include <XrdCl/XrdClURL.hh>
#include <XrdCl/XrdClXRootDResponses.hh>

#include "base/log.h"
#include "base/mutex.h"

namespace ferry::plugin {
namespace {

// Counts outstanding XrdCl requests of one Read() call.
struct Latch {
  explicit Latch(size_t n) : left(n) {}
  Mutex mu;
  CondVar cv;
  size_t left FERRY_GUARDED_BY(mu);
  void Done() {
    MutexLock lock(mu);
    if (--left == 0) {
      cv.NotifyAll();
    }
  }
  void Wait() {
    MutexLock lock(mu);
    while (left != 0) {
      cv.Wait(mu);
    }
  }
};

// True when a failed request leaves its file unusable (so it must be reopened).
bool LeavesFileBroken(const XrdCl::XRootDStatus& st) {
  switch (st.code) {
    case XrdCl::errSocketError:
    case XrdCl::errSocketDisconnected:
    case XrdCl::errConnectionError:
    case XrdCl::errStreamDisconnect:
    case XrdCl::errPollerError:
    case XrdCl::errInvalidSession:
    case XrdCl::errOperationInterrupted:
    case XrdCl::errInvalidOp:
      return true;
    case XrdCl::errErrorResponse:
      return st.errNo == kXR_FileNotOpen;
    default:
      return false;
  }
}

class ReadHandler final : public XrdCl::ResponseHandler {
 public:
  ReadHandler(std::span<io::ReadRequest> ranges,
              bool vector,
              Latch& latch,
              XrdOrigin& origin,
              size_t channel)
      : ranges_(ranges), vector_(vector), latch_(latch), origin_(origin), channel_(channel) {}

  void HandleResponse(XrdCl::XRootDStatus* status, XrdCl::AnyObject* response) override {
    std::unique_ptr<XrdCl::XRootDStatus> st(status);
    std::unique_ptr<XrdCl::AnyObject> resp(response);
    if (st && !st->IsOK() && LeavesFileBroken(*st)) {
      origin_.MarkBroken(channel_);
    }
    if (!st || !st->IsOK()) {
      origin_.MarkFailed();
    }
    if (!st || !st->IsOK()) {
      const Error e = st ? ToError(*st, vector_ ? "vector read" : "read")
                         : Error(ErrorCode::kRemote, "no status from XrdCl");
      for (io::ReadRequest& r : ranges_) {
        r.status = e;
      }
    } else if (vector_) {
      for (io::ReadRequest& r : ranges_) {
        r.status = OkStatus();
      }
    } else {
      XrdCl::ChunkInfo* chunk = nullptr;
      if (resp) {
        resp->Get(chunk);
      }
      const bool whole = chunk != nullptr && chunk->length == ranges_[0].dest.size();
      ranges_[0].status =
          whole ? OkStatus() : Status(Error(ErrorCode::kShortRead, "short read from origin"));
    }
    Latch& latch = latch_;
    delete this;
    latch.Done();
  }

 private:
  std::span<io::ReadRequest> ranges_;
  bool vector_;
  Latch& latch_;
  XrdOrigin& origin_;
  size_t channel_;
};

class ChannelHandler final : public XrdCl::ResponseHandler {
 public:
  ChannelHandler(std::shared_ptr<XrdOrigin> origin, size_t k, bool open)
      : origin_(std::move(origin)), k_(k), open_(open) {}
  void HandleResponse(XrdCl::XRootDStatus* status, XrdCl::AnyObject* response) override {
    const bool ok = status != nullptr && status->IsOK();
    delete status;
    delete response;
    if (open_) {
      origin_->OnChannelOpened(k_, ok);
    } else {
      origin_->OnChannelClosed(k_);
    }
    XrdOrigin::ReleaseLater(std::move(origin_));
    delete this;
  }

 private:
  std::shared_ptr<XrdOrigin> origin_;
  size_t k_;
  bool open_;
};

}  // namespace

Error ToError(const XrdCl::XRootDStatus& st, const std::string& what) {
  ErrorCode code = ErrorCode::kRemote;
  switch (st.code) {
    case XrdCl::errOperationExpired:
    case XrdCl::errSocketTimeout:
      code = ErrorCode::kTimeout;
      break;
    case XrdCl::errSocketError:
    case XrdCl::errSocketDisconnected:
    case XrdCl::errConnectionError:
    case XrdCl::errStreamDisconnect:
    case XrdCl::errPollerError:
    case XrdCl::errInvalidSession:
    case XrdCl::errOperationInterrupted:
      code = ErrorCode::kIo;
      break;
    case XrdCl::errErrorResponse:
      switch (st.errNo) {
        case kXR_NotFound:
          code = ErrorCode::kNotFound;
          break;
        case kXR_NotAuthorized:
          code = ErrorCode::kPermission;
          break;
        case kXR_IOError:
        case kXR_ServerError:
        case kXR_Overloaded:
          code = ErrorCode::kIo;
          break;
        default:
          break;
      }
      break;
    default:
      break;
  }
  return {code, "xrootd " + what + ": " + st.ToStr(), static_cast<int>(st.errNo)};
}

std::string ChannelUrl(const std::string& url, size_t k) {
  const size_t sep = url.find("://");
  if (k == 0 || sep == std::string::npos) {
    return url;
  }
  const size_t host = sep + 3;
  const size_t slash = url.find('/', host);
  const size_t at = url.find('@', host);
  if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
    return url;  // names a user already: keep its identity
  }
  return url.substr(0, host) + "ferry" + std::to_string(k) + "@" + url.substr(host);
}

XrdOrigin::XrdOrigin(std::string url,
                     XrdCl::OpenFlags::Flags flags,
                     XrdCl::Access::Mode mode,
                     uint16_t timeout,
                     size_t channels,
                     WorkerPool* pool,
                     const std::atomic<bool>* exiting)
    : url_(std::move(url)),
      flags_(flags),
      mode_(mode),
      timeout_(timeout),
      pool_(pool),
      exiting_(exiting) {
  for (size_t i = 0; i < std::max<size_t>(channels, 1); ++i) {
    files_.push_back(std::make_unique<Channel>());
  }
  main_.store(&files_[0]->file, std::memory_order_release);
}

void XrdOrigin::MarkBroken(size_t channel) {
  if (channel == 0) {
    broken_.store(true, std::memory_order_release);
  } else if (channel < files_.size()) {
    files_[channel]->ready.store(false, std::memory_order_release);
  }
}

XrdCl::XRootDStatus XrdOrigin::Reopen() {
  MutexLock lock(open_mu_);
  if (!broken_.load(std::memory_order_acquire)) {
    return {};  // another thread reopened it
  }
  auto file = std::make_unique<XrdCl::File>(false);
  CountOpen();
  XrdCl::XRootDStatus st = file->Open(url_, flags_, mode_, timeout_);
  if (st.IsOK()) {
    main_.store(file.get(), std::memory_order_release);
    reopened_.push_back(std::move(file));
    broken_.store(false, std::memory_order_release);
  }
  return st;
}

XrdOrigin::~XrdOrigin() = default;  // XrdCl::File closes what is still open

XrdCl::XRootDStatus XrdOrigin::EnsureOpen() {
  MutexLock lock(open_mu_);
  if (!open_tried_) {
    FERRY_DEBUG("origin", "open %s", url_.c_str());
    CountOpen();
    open_status_ = files_[0]->file.Open(url_, flags_, mode_, timeout_);
    open_tried_ = true;
    if (open_status_.IsOK()) {
      files_[0]->ready.store(true, std::memory_order_release);
      open_.store(true, std::memory_order_release);
    }
  }
  return open_status_;
}

void XrdOrigin::ReleaseLater(std::shared_ptr<XrdOrigin> origin) {
  if (!origin) {
    return;
  }
  if (origin->exiting_ != nullptr && origin->exiting_->load()) {
    new std::shared_ptr<XrdOrigin>(std::move(origin));  // leaked: XrdCl is shutting down
    return;
  }
  WorkerPool* pool = origin->pool_;
  pool->Submit([o = std::move(origin)]() mutable { o.reset(); });
}

void XrdOrigin::PrepareChannels() {
  if (files_.size() > 1 && is_open()) {
    OpenExtraChannels();
  }
}

void XrdOrigin::OpenExtraChannels() {
  MutexLock lock(channels_mu_);
  if (closing_ || extra_started_) {
    return;
  }
  extra_started_ = true;
  for (size_t k = 1; k < files_.size(); ++k) {
    auto* handler = new ChannelHandler(shared_from_this(), k, /*open=*/true);
    files_[k]->state = ChannelState::kOpening;
    XrdCl::XRootDStatus st =
        files_[k]->file.Open(ChannelUrl(url_, k), XrdCl::OpenFlags::Read, mode_, handler, timeout_);
    if (!st.IsOK()) {
      files_[k]->state = ChannelState::kDone;
      delete handler;
    }
  }
}

void XrdOrigin::OnChannelOpened(size_t k, bool ok) {
  MutexLock lock(channels_mu_);
  Channel& c = *files_[k];
  if (!ok) {
    c.state = ChannelState::kDone;
    return;
  }
  c.state = ChannelState::kOpen;
  if (closing_) {
    CloseChannelLocked(k);
  } else {
    c.ready.store(true, std::memory_order_release);
  }
}

void XrdOrigin::OnChannelClosed(size_t k) {
  MutexLock lock(channels_mu_);
  files_[k]->state = ChannelState::kDone;
}

bool XrdOrigin::SendClose(XrdCl::File& file, size_t k) {
  // The handler keeps this object alive until XrdCl answered, then releases it on a worker.
  auto* handler = new ChannelHandler(shared_from_this(), k, /*open=*/false);
  if (!file.Close(handler, timeout_).IsOK()) {
    delete handler;
    return false;
  }
  return true;
}

void XrdOrigin::CloseChannelLocked(size_t k) {
  Channel& c = *files_[k];
  c.ready.store(false, std::memory_order_release);
  c.state = ChannelState::kClosing;
  if (!SendClose(c.file, k)) {
    c.state = ChannelState::kDone;
  }
}

void XrdOrigin::CloseExtraChannels() {
  MutexLock lock(channels_mu_);
  closing_ = true;
  for (size_t k = 1; k < files_.size(); ++k) {
    if (files_[k]->state == ChannelState::kOpen) {
      CloseChannelLocked(k);
    }
  }
}

void XrdOrigin::CloseInBackground() {
  (void)SendClose(inner(), 0);
}

bool XrdOrigin::channel_ready(size_t channel) const {
  return channel < files_.size() && files_[channel]->ready.load(std::memory_order_acquire);
}

Result<cache::OriginInfo> XrdOrigin::Stat() {
  XrdCl::XRootDStatus st = EnsureOpen();
  if (!st.IsOK()) {
    failed_.store(true, std::memory_order_release);
    return ToError(st, "open " + url_);
  }
  if (restat_.exchange(false, std::memory_order_acq_rel)) {
    return Restat();
  }
  // The stat XrdCl received with the open (no round trip).
  XrdCl::StatInfo* info = nullptr;
  st = inner().Stat(false, info, timeout_);
  std::unique_ptr<XrdCl::StatInfo> owned(info);
  if (!st.IsOK() || info == nullptr) {
    failed_.store(true, std::memory_order_release);
    return ToError(st, "stat " + url_);
  }
  return cache::OriginInfo{info->GetSize(), static_cast<int64_t>(info->GetModTime())};
}

Result<cache::OriginInfo> XrdOrigin::Restat() {
  // The cache stats only to revalidate its entry: it must see the file as the origin has it
  // now, as the open of a new handle would show it, not as it was when this handle opened.
  XrdCl::StatInfo* opened = nullptr;
  XrdCl::XRootDStatus st = inner().Stat(false, opened, timeout_);
  std::unique_ptr<XrdCl::StatInfo> owned_opened(opened);
  const XrdCl::URL url(url_);
  XrdCl::FileSystem fs(url, /*enablePlugIns=*/false);
  XrdCl::StatInfo* now = nullptr;
  st = fs.Stat(url.GetPath(), now, timeout_);
  std::unique_ptr<XrdCl::StatInfo> owned_now(now);
  if (!st.IsOK() || now == nullptr) {
    failed_.store(true, std::memory_order_release);
    return ToError(st, "stat " + url_);
  }
  if (opened != nullptr && opened->GetSize() == now->GetSize()
      && opened->GetModTime() == now->GetModTime()) {
    return cache::OriginInfo{now->GetSize(), static_cast<int64_t>(now->GetModTime())};
  }
  // Changed since this handle opened (or replaced under the same name): its channels may read
  // the old file. Channel 0 is reopened at the path now, so that this answer and every later
  // stat and read are of the same file; the extra channels are dropped, and the handle is not
  // kept again.
  FERRY_DEBUG("origin", "%s changed since its handle opened: reopening", url_.c_str());
  failed_.store(true, std::memory_order_release);
  for (size_t k = 0; k < files_.size(); ++k) {
    MarkBroken(k);
  }
  st = Reopen();
  if (!st.IsOK()) {
    return ToError(st, "open " + url_);
  }
  XrdCl::StatInfo* reopened = nullptr;
  st = inner().Stat(false, reopened, timeout_);
  std::unique_ptr<XrdCl::StatInfo> owned_reopened(reopened);
  if (!st.IsOK() || reopened == nullptr) {
    return ToError(st, "stat " + url_);
  }
  return cache::OriginInfo{reopened->GetSize(), static_cast<int64_t>(reopened->GetModTime())};
}

void XrdOrigin::Read(std::span<cache::OriginRead> reads) {
  XrdCl::XRootDStatus open = EnsureOpen();
  if (open.IsOK() && broken_.load(std::memory_order_acquire)) {
    open = Reopen();
  }
  if (!open.IsOK()) {
    const Error e = ToError(open, "open " + url_);
    for (cache::OriginRead& r : reads) {
      for (io::ReadRequest& q : r.ranges) {
        q.status = e;
      }
    }
    return;
  }
  Latch latch(reads.size() + 1);  // +1 until every request is issued
  for (cache::OriginRead& r : reads) {
    const size_t ch = channel_ready(r.channel) ? r.channel : 0;
    XrdCl::File& file = ch == 0 ? inner() : files_[ch]->file;
    const bool vector = r.ranges.size() > 1;
    // One line per origin request: with FERRY_LOG=debug an admin sees what crossed the WAN.
    if (log::Enabled(log::Level::kDebug)) {
      uint64_t bytes = 0;
      for (const io::ReadRequest& q : r.ranges) {
        bytes += q.dest.size();
      }
      FERRY_DEBUG("origin", "read %s channel %zu: %zu range(s), %llu bytes from %llu", url_.c_str(),
                  ch, r.ranges.size(), static_cast<unsigned long long>(bytes),
                  static_cast<unsigned long long>(r.ranges[0].offset));
    }
    auto* handler = new ReadHandler(r.ranges, vector, latch, *this, ch);
    XrdCl::XRootDStatus st;
    if (vector) {
      XrdCl::ChunkList chunks;
      chunks.reserve(r.ranges.size());
      for (io::ReadRequest& q : r.ranges) {
        chunks.emplace_back(q.offset, static_cast<uint32_t>(q.dest.size()), q.dest.data());
      }
      st = file.VectorRead(chunks, nullptr, handler, timeout_);
    } else {
      io::ReadRequest& q = r.ranges[0];
      st = file.Read(q.offset, static_cast<uint32_t>(q.dest.size()), q.dest.data(), handler,
                     timeout_);
    }
    if (!st.IsOK()) {
      // Not issued: the handler will not be called.
      handler->HandleResponse(new XrdCl::XRootDStatus(st), nullptr);
    }
  }
  latch.Done();
  latch.Wait();
}

}  // namespace ferry::plugin
