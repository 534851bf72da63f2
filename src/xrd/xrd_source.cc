#include "xrd/xrd_source.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include <XProtocol/XProtocol.hh>
#include <XrdCl/XrdClFile.hh>
#include <XrdCl/XrdClURL.hh>
#include <XrdCl/XrdClXRootDResponses.hh>

#include "base/mutex.h"

namespace ferry::xrd {
namespace {

int ErrnoOf(const XrdCl::XRootDStatus& st) {
  if (st.code == XrdCl::errErrorResponse) {
    return XProtocol::toErrno(static_cast<int>(st.errNo));
  }
  if (st.code == XrdCl::errOperationExpired || st.code == XrdCl::errSocketTimeout) {
    return ETIMEDOUT;
  }
  return static_cast<int>(st.errNo);
}

Error RemoteError(const XrdCl::XRootDStatus& st, const std::string& what) {
  std::string text = st.ToStr();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  return {ErrorCode::kRemote, what + ": " + text, ErrnoOf(st)};
}

// What an open's failure most likely means and what to do, for the messages a newcomer meets
// first (an origin that is down, a wrong key); "" when the status says enough.
std::string OpenHint(const XrdCl::XRootDStatus& st, const XrdCl::URL& url) {
  const std::string host = url.GetHostId();
  switch (st.code) {
    case XrdCl::errConnectionError:
    case XrdCl::errSocketTimeout:
    case XrdCl::errSocketError:
    case XrdCl::errOperationExpired:
    case XrdCl::errInvalidAddr:
      return " (the origin " + host + " does not answer: check that its xrootd runs and the "
             "host and port; 'xrdfs " + host + " query config version' asks it, 'ferry cache "
             "doctor URL' measures it)";
    case XrdCl::errAuthFailed:
      return " (" + host + " refused your credentials: check XrdSecPROTOCOL and your sss key, "
             "token or X.509 proxy)";
    default:
      return "";
  }
}

std::string Range(uint64_t offset, uint64_t size) {
  return "[" + std::to_string(offset) + ", +" + std::to_string(size) + ")";
}

// Completion of the vector-read requests of one ReadV call. Waits are bounded: every
// outstanding request is answered by XrdCl within its timeout.
class VectorBatchState {
 public:
  // Waits for a free request slot of at most `limit`, then takes it.
  void Acquire(size_t limit) {
    MutexLock lock(mu_);
    while (in_flight_ >= limit) {
      cv_.Wait(mu_);
    }
    ++in_flight_;
  }
  void Release() {
    MutexLock lock(mu_);
    --in_flight_;
    cv_.NotifyAll();
  }
  void WaitIdle() {
    MutexLock lock(mu_);
    while (in_flight_ != 0) {
      cv_.Wait(mu_);
    }
  }

 private:
  Mutex mu_;
  CondVar cv_;
  size_t in_flight_ FERRY_GUARDED_BY(mu_) = 0;
};

// Receives one VectorRead answer. XrdCl calls HandleResponse exactly once (also on timeout);
// the handler then owns the status and the response.
class VectorHandler final : public XrdCl::ResponseHandler {
 public:
  VectorHandler(VectorBatchState* state, const std::vector<VectorChunk>* chunks)
      : state_(state), chunks_(chunks) {}

  void HandleResponse(XrdCl::XRootDStatus* status, XrdCl::AnyObject* response) override {
    std::unique_ptr<XrdCl::XRootDStatus> st(status);
    std::unique_ptr<XrdCl::AnyObject> resp(response);
    if (st == nullptr || !st->IsOK()) {
      error_ = st != nullptr ? *st : XrdCl::XRootDStatus(XrdCl::stError, XrdCl::errInternal);
    } else {
      XrdCl::VectorReadInfo* info = nullptr;
      if (resp != nullptr) {
        resp->Get(info);
      }
      // The data is already in the callers' buffers; check that every chunk came back whole.
      if (info == nullptr || info->GetChunks().size() != chunks_->size()) {
        short_ = true;
      } else {
        const XrdCl::ChunkList& got = info->GetChunks();
        for (size_t i = 0; i < got.size(); ++i) {
          if (got[i].GetLength() != (*chunks_)[i].length) {
            short_ = true;
          }
          bytes_ += got[i].GetLength();
        }
      }
    }
    state_->Release();
  }

  const std::optional<XrdCl::XRootDStatus>& error() const { return error_; }
  bool short_answer() const { return short_; }
  uint64_t bytes() const { return bytes_; }

 private:
  VectorBatchState* state_;
  const std::vector<VectorChunk>* chunks_;
  std::optional<XrdCl::XRootDStatus> error_;
  bool short_ = false;
  uint64_t bytes_ = 0;
};

}  // namespace

std::string RedactUrl(std::string_view url) {
  std::string out(url.substr(0, url.find('?')));
  size_t scheme = out.find("://");
  if (scheme == std::string::npos) {
    return out;
  }
  size_t host_begin = scheme + 3;
  size_t host_end = out.find('/', host_begin);
  size_t at = out.rfind('@', host_end == std::string::npos ? out.size() : host_end);
  if (at != std::string::npos && at >= host_begin) {
    out.erase(host_begin, at + 1 - host_begin);
  }
  return out;
}

std::vector<std::vector<VectorChunk>> PlanVectorRead(std::span<const io::ReadRequest> requests,
                                                     uint32_t max_chunk_bytes,
                                                     uint32_t max_chunks) {
  max_chunk_bytes = std::max<uint32_t>(max_chunk_bytes, 1);
  max_chunks = std::max<uint32_t>(max_chunks, 1);
  std::vector<std::vector<VectorChunk>> batches;
  for (size_t r = 0; r < requests.size(); ++r) {
    const io::ReadRequest& req = requests[r];
    size_t done = 0;
    while (done < req.dest.size()) {
      if (batches.empty() || batches.back().size() >= max_chunks) {
        batches.emplace_back();
        batches.back().reserve(std::min<size_t>(max_chunks, 1024));
      }
      const size_t len = std::min<size_t>(req.dest.size() - done, max_chunk_bytes);
      batches.back().push_back(VectorChunk{req.offset + done, static_cast<uint32_t>(len), r, done});
      done += len;
    }
  }
  return batches;
}

XrdSource::XrdSource(std::unique_ptr<XrdCl::File> file,
                     uint64_t size,
                     std::string url,
                     const XrdSourceOptions& options)
    : file_(std::move(file)),
      size_(size),
      url_(std::move(url)),
      name_(RedactUrl(url_)),
      options_(options) {}

XrdSource::~XrdSource() {
  if (file_ != nullptr && file_->IsOpen()) {
    XrdCl::XRootDStatus st = file_->Close(options_.timeout_seconds);
    (void)st;  // nothing useful to do with a failed close of a read-only file
  }
}

Result<std::unique_ptr<XrdSource>> XrdSource::Open(const std::string& url,
                                                   const XrdSourceOptions& options) {
  const std::string name = RedactUrl(url);
  XrdCl::URL parsed(url);
  if (!parsed.IsValid()) {
    return InvalidArgumentError("not a valid XRootD URL: " + name);
  }
  auto file = std::make_unique<XrdCl::File>(options.enable_plugins);
  XrdCl::XRootDStatus st =
      file->Open(url, XrdCl::OpenFlags::Read, XrdCl::Access::None, options.timeout_seconds);
  if (!st.IsOK()) {
    Error e = RemoteError(st, "open " + name);
    return Error(e.code(), e.message() + OpenHint(st, parsed), e.sys_errno());
  }
  XrdCl::StatInfo* raw_info = nullptr;
  st = file->Stat(false, raw_info, options.timeout_seconds);
  std::unique_ptr<XrdCl::StatInfo> info(raw_info);
  if (!st.IsOK() || info == nullptr) {
    XrdCl::XRootDStatus close_st = file->Close(options.timeout_seconds);
    (void)close_st;
    return RemoteError(st, "stat " + name);
  }
  return std::unique_ptr<XrdSource>(new XrdSource(std::move(file), info->GetSize(), url, options));
}

XrdWireStats XrdSource::wire_stats() const {
  XrdWireStats s;
  s.read_requests = wire_reads_.load(std::memory_order_relaxed);
  s.vector_requests = wire_vectors_.load(std::memory_order_relaxed);
  s.vector_chunks = wire_chunks_.load(std::memory_order_relaxed);
  s.bytes = wire_bytes_.load(std::memory_order_relaxed);
  return s;
}

Status XrdSource::DoReadAt(uint64_t offset, std::span<uint8_t> dest) {
  size_t done = 0;
  // Every round reads at least one byte or returns, so this ends after at most dest.size()
  // rounds; in practice one round per max_read_bytes.
  while (done < dest.size()) {
    const uint32_t want = static_cast<uint32_t>(
        std::min<size_t>(dest.size() - done, std::max<uint32_t>(options_.max_read_bytes, 1)));
    uint32_t got = 0;
    wire_reads_.fetch_add(1, std::memory_order_relaxed);
    XrdCl::XRootDStatus st =
        file_->Read(offset + done, want, dest.data() + done, got, options_.timeout_seconds);
    if (!st.IsOK()) {
      return RemoteError(st, "read " + name_ + " " + Range(offset + done, want));
    }
    wire_bytes_.fetch_add(got, std::memory_order_relaxed);
    if (got == 0) {
      return Error(ErrorCode::kShortRead, "read " + name_ + " " + Range(offset + done, want)
                                              + ": the server returned no data (file shrank?)");
    }
    done += got;
  }
  return OkStatus();
}

void XrdSource::DoReadV(std::span<io::ReadRequest> requests) {
  for (io::ReadRequest& r : requests) {
    r.status = OkStatus();
  }
  const std::vector<std::vector<VectorChunk>> batches =
      PlanVectorRead(requests, options_.max_chunk_bytes, options_.max_chunks_per_request);
  if (batches.empty()) {
    return;
  }
  VectorBatchState state;
  std::vector<std::unique_ptr<VectorHandler>> handlers;
  std::vector<std::optional<XrdCl::XRootDStatus>> submit_errors(batches.size());
  handlers.reserve(batches.size());
  const size_t max_in_flight = std::max<uint32_t>(options_.max_requests_in_flight, 1);

  for (size_t b = 0; b < batches.size(); ++b) {
    state.Acquire(max_in_flight);
    XrdCl::ChunkList chunks;
    chunks.reserve(batches[b].size());
    for (const VectorChunk& c : batches[b]) {
      chunks.emplace_back(c.offset, c.length, requests[c.request].dest.data() + c.dest_offset);
    }
    handlers.push_back(std::make_unique<VectorHandler>(&state, &batches[b]));
    wire_vectors_.fetch_add(1, std::memory_order_relaxed);
    wire_chunks_.fetch_add(chunks.size(), std::memory_order_relaxed);
    XrdCl::XRootDStatus st =
        file_->VectorRead(chunks, nullptr, handlers.back().get(), options_.timeout_seconds);
    if (!st.IsOK()) {
      // Not sent: the handler will never be called.
      submit_errors[b] = st;
      state.Release();
    }
  }
  state.WaitIdle();

  for (size_t b = 0; b < batches.size(); ++b) {
    const VectorHandler& h = *handlers[b];
    wire_bytes_.fetch_add(h.bytes(), std::memory_order_relaxed);
    std::optional<Error> err;
    if (submit_errors[b].has_value()) {
      err = RemoteError(*submit_errors[b], "vector read " + name_);
    } else if (h.error().has_value()) {
      err = RemoteError(*h.error(), "vector read " + name_);
    } else if (h.short_answer()) {
      err = Error(ErrorCode::kShortRead,
                  "vector read " + name_ + ": the server returned fewer bytes than asked");
    }
    if (!err.has_value()) {
      continue;
    }
    for (const VectorChunk& c : batches[b]) {
      io::ReadRequest& r = requests[c.request];
      if (r.status.has_value()) {
        r.status = Error(*err).AddContext("range " + Range(r.offset, r.dest.size()));
      }
    }
  }
}

}  // namespace ferry::xrd
