#include "plugin/xrdcl/ferry_file.h"

#include <atomic>
#include <cstring>
#include <typeinfo>
#include <utility>

#include <XrdCl/XrdClFile.hh>
#include <XrdCl/XrdClXRootDResponses.hh>

#include "base/crc32c.h"
#include "base/mutex.h"
#include "plugin/xrdcl/xrd_origin.h"

namespace ferry::plugin {

using XrdCl::ResponseHandler;
using XrdCl::XRootDStatus;

struct FileState {
  std::shared_ptr<Context> ctx;
  std::string url;
  std::shared_ptr<XrdOrigin> origin;
  SharedMutex io_mu;  // `cached`: reads shared, close/writes exclusive
  std::unique_ptr<cache::CachedFile> cached FERRY_GUARDED_BY(io_mu);  // null: to the origin
  std::atomic<bool> open{false};
  std::atomic<bool> writable{false};  // write mode, or written to: pass-through for good
  // Serves a replica's virtual file (cache/cache.h): its reads and Stat never go to the origin
  // as they are, since the origin's file has another layout and size.
  bool virtual_file = false;
  uint64_t size = 0;
  int64_t mtime = 0;
};

namespace {

void Answer(ResponseHandler* h, const XRootDStatus& st, XrdCl::AnyObject* response = nullptr) {
  if (h == nullptr) {
    delete response;
    return;
  }
  h->HandleResponseWithHosts(new XRootDStatus(st), response, new XrdCl::HostList());
}

template <class T>
XrdCl::AnyObject* Wrap(T* object) {
  auto* any = new XrdCl::AnyObject();
  any->Set(object);
  return any;
}

// XrdCl's synchronous calls wait on an XrdCl::SyncResponseHandler (its header is private, so
// the type is recognised by name). Their caller is blocked anyway: the plug-in then works in
// that thread instead of a worker, two thread switches less per miss.
bool IsSyncHandler(ResponseHandler* h) {
  return h != nullptr && std::strcmp(typeid(*h).name(), "N5XrdCl19SyncResponseHandlerE") == 0;
}

// Runs `task` in this thread for synchronous callers, on a worker otherwise.
template <class Task>
void RunFor(const std::shared_ptr<FileState>& s, ResponseHandler* h, Task task) {
  if (IsSyncHandler(h)) {
    task();
  } else {
    s->ctx->pool->Submit(std::move(task));
  }
}

XRootDStatus NotOpen() {
  return {XrdCl::stError, XrdCl::errInvalidOp};
}

// The handle's open succeeded with `file`.
void Adopt(FileState& s, std::unique_ptr<cache::CachedFile> file) {
  {
    WriterLock lock(s.io_mu);
    s.cached = std::move(file);
    s.virtual_file = s.cached->virtual_file();
    s.size = s.cached->size();
    s.mtime = s.cached->mtime();
  }
  s.open = true;
}

bool IsWriteMode(XrdCl::OpenFlags::Flags flags) {
  using F = XrdCl::OpenFlags;
  return (flags & (F::Update | F::Write | F::New | F::Delete)) != 0;
}

uint32_t Clip(uint64_t file_size, uint64_t offset, uint32_t size) {
  if (offset >= file_size) {
    return 0;
  }
  return static_cast<uint32_t>(std::min<uint64_t>(size, file_size - offset));
}

// Runs `forward` (an XrdCl call on the inner file with the application's handler) once the
// inner file is open; opening it, when needed, happens on a worker.
template <class Forward>
XRootDStatus WithOrigin(const std::shared_ptr<FileState>& s, ResponseHandler* h, Forward forward) {
  if (s->origin->is_open()) {
    return forward();
  }
  RunFor(s, h, [s, h, forward] {
    XRootDStatus st = s->origin->EnsureOpen();
    if (st.IsOK()) {
      st = forward();
    }
    if (!st.IsOK()) {
      Answer(h, st);
    }
  });
  return {};
}

// Serves `reqs` from the cache: inline when every byte is held, otherwise on a worker (which
// may wait for the origin). When the cache cannot answer, `forward` hands the request to the
// origin unchanged, so the application gets the origin's own answer.
template <class Respond, class Forward>
XRootDStatus ServeFromCache(const std::shared_ptr<FileState>& s,
                            std::vector<io::ReadRequest> reqs,
                            ResponseHandler* h,
                            Respond respond,
                            Forward forward) {
  {
    ReaderLock lock(s->io_mu);
    if (!s->cached) {
      lock.Unlock();
      return WithOrigin(s, h, forward);
    }
    if (s->cached->AllHeld(reqs) && s->cached->ReadV(reqs)) {
      lock.Unlock();
      respond();
      return {};
    }
  }
  auto shared_reqs = std::make_shared<std::vector<io::ReadRequest>>(std::move(reqs));
  RunFor(s, h, [s, shared_reqs, h, respond, forward] {
    bool ok = false;
    {
      ReaderLock lock(s->io_mu);
      ok = s->cached && s->cached->ReadV(*shared_reqs);
    }
    if (ok) {
      respond();
      return;
    }
    if (s->virtual_file) {
      // The cache's answer was the origin's error, met while reading the original region;
      // forwarding would read the origin's layout, not the virtual file.
      Answer(h, XRootDStatus(XrdCl::stError, XrdCl::errErrorResponse, kXR_IOError,
                             "ferry cache: reading the origin failed"));
      return;
    }
    XRootDStatus st = s->origin->EnsureOpen();
    if (st.IsOK()) {
      st = forward();
    }
    if (!st.IsOK()) {
      Answer(h, st);
    }
  });
  return {};
}

// The handle stops caching for good: a writer changes the file.
void MakeWritable(const std::shared_ptr<FileState>& s) {
  if (s->writable.exchange(true)) {
    return;
  }
  WriterLock lock(s->io_mu);
  if (s->cached) {
    s->cached->Close();
    s->cached.reset();
  }
  if (s->ctx->cache) {
    (void)s->ctx->cache->Invalidate(s->url);
  }
}

}  // namespace

std::vector<uint32_t> PageChecksums(uint64_t offset, const uint8_t* data, size_t size) {
  constexpr uint64_t kPage = 4096;
  std::vector<uint32_t> out;
  out.reserve(size / kPage + 2);
  const uint64_t end = offset + size;
  for (uint64_t pos = offset; pos < end;) {
    const uint64_t stop = std::min(end, (pos / kPage + 1) * kPage);
    out.push_back(crc32c::Value(data + (pos - offset), stop - pos));
    pos = stop;
  }
  return out;
}

FerryFile::FerryFile(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}

FerryFile::~FerryFile() = default;

XRootDStatus FerryFile::Open(const std::string& url,
                             XrdCl::OpenFlags::Flags flags,
                             XrdCl::Access::Mode mode,
                             ResponseHandler* handler,
                             uint16_t timeout) {
  if (state_ && state_->open) {
    return {XrdCl::stError, XrdCl::errInvalidOp};
  }
  auto s = std::make_shared<FileState>();
  s->ctx = ctx_;
  s->url = url;
  const bool write = IsWriteMode(flags);
  const bool cached = !write && ctx_->cache != nullptr;
  s->origin =
      std::make_shared<XrdOrigin>(url, flags, mode, timeout, cached ? ctx_->config.channels : 1,
                                  ctx_->pool.get(), &ctx_->exiting);
  s->writable = !cached;
  for (const auto& [name, value] : pending_properties_) {
    s->origin->inner().SetProperty(name, value);
  }
  state_ = s;
  RunFor(s, handler, [s, handler, write] {
    if (s->writable) {
      if (write && s->ctx->cache) {
        (void)s->ctx->cache->Invalidate(s->url);
      }
      XRootDStatus st = s->origin->EnsureOpen();
      s->open = st.IsOK();
      Answer(handler, st);
      return;
    }
    NextFiles* next = s->ctx->next_files.get();
    if (auto warm = next != nullptr ? next->Take(s->url) : std::nullopt) {
      // Opened ahead of this reader (next_files.h): its origin handle and trees are ready.
      s->origin = std::move(warm->origin);
      Adopt(*s, std::move(warm->file));
      next->OnOpen(s->url);
      Answer(handler, XRootDStatus());
      return;
    }
    cache::OpenOptions options;
    options.read_ahead = true;  // when the conf's readahead is on
    options.detect_bulk = true;
    options.bulk_reader = s->ctx->copy_tool;
    auto file = s->ctx->cache->Open(s->url, s->origin, options);
    if (!file) {
      // The origin's own answer (Stat inside the cache failed after opening it).
      XRootDStatus st = s->origin->EnsureOpen();
      if (st.IsOK()) {
        st = XRootDStatus(XrdCl::stError, XrdCl::errInternal, 0, file.error().ToString());
      }
      Answer(handler, st);
      return;
    }
    Adopt(*s, std::move(*file));
    if (next != nullptr) {
      next->OnOpen(s->url);
    }
    Answer(handler, XRootDStatus());
  });
  return {};
}

XRootDStatus FerryFile::Close(ResponseHandler* handler, uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open.exchange(false)) {
    return NotOpen();
  }
  {
    WriterLock lock(s->io_mu);
    if (s->cached) {
      s->cached->Close();
      s->cached.reset();
    }
  }
  s->origin->CloseExtraChannels();
  if (s->origin->is_open()) {
    if (!s->writable) {
      // A read-only handle of the cache: the application goes on at once and the origin's
      // handle closes in the background. A reader that opens its files one after another
      // (a TChain, uproot) otherwise waits one round trip per file for an answer that
      // changes nothing.
      s->origin->CloseInBackground();
      Answer(handler, XRootDStatus());
      return {};
    }
    return s->origin->inner().Close(handler, timeout);
  }
  Answer(handler, XRootDStatus());
  return {};
}

XRootDStatus FerryFile::Stat(bool force, ResponseHandler* handler, uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  auto forward = [s, force, handler, timeout] {
    return s->origin->inner().Stat(force, handler, timeout);
  };
  if (!s->virtual_file && (force || s->writable || s->origin->is_open())) {
    return WithOrigin(s, handler, forward);
  }
  // Answered from the cache: no origin contact (and the virtual file's size for a replica).
  Answer(handler, XRootDStatus(),
         Wrap(new XrdCl::StatInfo("ferry-cache", s->size, XrdCl::StatInfo::IsReadable,
                                  static_cast<uint64_t>(s->mtime))));
  return {};
}

XRootDStatus FerryFile::Read(
    uint64_t offset, uint32_t size, void* buffer, ResponseHandler* handler, uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  auto forward = [s, offset, size, buffer, handler, timeout] {
    return s->origin->inner().Read(offset, size, buffer, handler, timeout);
  };
  if (s->writable) {
    return WithOrigin(s, handler, forward);
  }
  const uint32_t n = Clip(s->size, offset, size);
  auto respond = [offset, n, buffer, handler] {
    Answer(handler, XRootDStatus(), Wrap(new XrdCl::ChunkInfo(offset, n, buffer)));
  };
  if (n == 0) {
    respond();
    return {};
  }
  std::vector<io::ReadRequest> reqs{{offset, {static_cast<uint8_t*>(buffer), n}, {}}};
  return ServeFromCache(s, std::move(reqs), handler, respond, forward);
}

XRootDStatus FerryFile::Read(uint64_t offset,
                             uint32_t size,
                             XrdCl::Optional<uint64_t> fdoff,
                             int fd,
                             ResponseHandler* handler,
                             uint16_t timeout) {
  // Not reachable through XrdCl::File 5.5.3; forwarded for completeness. The inner file has no
  // public splice read either, so this is a plain read into nothing: refuse like the default.
  (void)offset;
  (void)size;
  (void)fdoff;
  (void)fd;
  (void)handler;
  (void)timeout;
  return {XrdCl::stError, XrdCl::errNotImplemented};
}

XRootDStatus FerryFile::PgRead(
    uint64_t offset, uint32_t size, void* buffer, ResponseHandler* handler, uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  auto forward = [s, offset, size, buffer, handler, timeout] {
    return s->origin->inner().PgRead(offset, size, buffer, handler, timeout);
  };
  if (s->writable) {
    return WithOrigin(s, handler, forward);
  }
  const uint32_t n = Clip(s->size, offset, size);
  auto respond = [offset, n, buffer, handler] {
    auto* info = new XrdCl::PageInfo(offset, n, buffer,
                                     PageChecksums(offset, static_cast<uint8_t*>(buffer), n));
    Answer(handler, XRootDStatus(), Wrap(info));
  };
  if (n == 0) {
    respond();
    return {};
  }
  std::vector<io::ReadRequest> reqs{{offset, {static_cast<uint8_t*>(buffer), n}, {}}};
  return ServeFromCache(s, std::move(reqs), handler, respond, forward);
}

XRootDStatus FerryFile::VectorRead(const XrdCl::ChunkList& chunks,
                                   void* buffer,
                                   ResponseHandler* handler,
                                   uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  auto forward = [s, chunks, buffer, handler, timeout] {
    return s->origin->inner().VectorRead(chunks, buffer, handler, timeout);
  };
  if (s->writable || chunks.empty()) {
    return WithOrigin(s, handler, forward);
  }
  // Chunks the cache cannot answer exactly like the origin would (empty, past the end, no
  // buffer) go to the origin as they are.
  auto out = std::make_shared<XrdCl::ChunkList>();
  out->reserve(chunks.size());
  std::vector<io::ReadRequest> reqs;
  reqs.reserve(chunks.size());
  auto* next = static_cast<uint8_t*>(buffer);
  uint64_t total = 0;
  for (const XrdCl::ChunkInfo& c : chunks) {
    auto* dest = buffer != nullptr ? next : static_cast<uint8_t*>(c.buffer);
    if (c.length == 0 || dest == nullptr || c.offset > s->size || c.length > s->size - c.offset) {
      return WithOrigin(s, handler, forward);
    }
    reqs.push_back({c.offset, {dest, c.length}, {}});
    out->emplace_back(c.offset, c.length, dest);
    next += buffer != nullptr ? c.length : 0;
    total += c.length;
  }
  auto respond = [out, total, handler] {
    auto* info = new XrdCl::VectorReadInfo();
    info->SetSize(static_cast<uint32_t>(total));
    info->GetChunks() = *out;
    Answer(handler, XRootDStatus(), Wrap(info));
  };
  return ServeFromCache(s, std::move(reqs), handler, respond, forward);
}

// ---- writes: the handle passes through from now on and the cached copy is dropped ----

XRootDStatus FerryFile::Write(uint64_t offset,
                              uint32_t size,
                              const void* buffer,
                              ResponseHandler* handler,
                              uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  MakeWritable(s);
  return WithOrigin(s, handler, [s, offset, size, buffer, handler, timeout] {
    return s->origin->inner().Write(offset, size, buffer, handler, timeout);
  });
}

XRootDStatus FerryFile::Write(uint64_t offset,
                              XrdCl::Buffer&& buffer,
                              ResponseHandler* handler,
                              uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  MakeWritable(s);
  if (!s->origin->is_open()) {
    XRootDStatus st = s->origin->EnsureOpen();  // the buffer cannot wait in a task (move-only)
    if (!st.IsOK()) {
      return st;
    }
  }
  return s->origin->inner().Write(offset, std::move(buffer), handler, timeout);
}

XRootDStatus FerryFile::Write(uint64_t offset,
                              uint32_t size,
                              XrdCl::Optional<uint64_t> fdoff,
                              int fd,
                              ResponseHandler* handler,
                              uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  MakeWritable(s);
  return WithOrigin(s, handler, [s, offset, size, fdoff, fd, handler, timeout] {
    return s->origin->inner().Write(offset, size, fdoff, fd, handler, timeout);
  });
}

XRootDStatus FerryFile::PgWrite(uint64_t offset,
                                uint32_t nbpgs,
                                const void* buffer,
                                std::vector<uint32_t>& cksums,
                                ResponseHandler* handler,
                                uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  MakeWritable(s);
  if (!s->origin->is_open()) {
    XRootDStatus st = s->origin->EnsureOpen();  // cksums is the caller's reference
    if (!st.IsOK()) {
      return st;
    }
  }
  return s->origin->inner().PgWrite(offset, nbpgs, buffer, cksums, handler, timeout);
}

XRootDStatus FerryFile::Truncate(uint64_t size, ResponseHandler* handler, uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  MakeWritable(s);
  return WithOrigin(s, handler, [s, size, handler, timeout] {
    return s->origin->inner().Truncate(size, handler, timeout);
  });
}

XRootDStatus FerryFile::VectorWrite(const XrdCl::ChunkList& chunks,
                                    ResponseHandler* handler,
                                    uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  MakeWritable(s);
  return WithOrigin(s, handler, [s, chunks, handler, timeout] {
    return s->origin->inner().VectorWrite(chunks, handler, timeout);
  });
}

XRootDStatus FerryFile::WriteV(uint64_t offset,
                               const struct iovec* iov,
                               int iovcnt,
                               ResponseHandler* handler,
                               uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  MakeWritable(s);
  if (!s->origin->is_open()) {
    XRootDStatus st = s->origin->EnsureOpen();  // iov belongs to the caller's frame
    if (!st.IsOK()) {
      return st;
    }
  }
  return s->origin->inner().WriteV(offset, iov, iovcnt, handler, timeout);
}

// ---- everything else goes to the origin ----

XRootDStatus FerryFile::Sync(ResponseHandler* handler, uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  if (!s->writable && !s->origin->is_open()) {
    Answer(handler, XRootDStatus());  // nothing was written
    return {};
  }
  return WithOrigin(s, handler,
                    [s, handler, timeout] { return s->origin->inner().Sync(handler, timeout); });
}

XRootDStatus FerryFile::Fcntl(const XrdCl::Buffer& arg,
                              ResponseHandler* handler,
                              uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  if (!s->origin->is_open()) {
    XRootDStatus st = s->origin->EnsureOpen();  // arg is the caller's reference
    if (!st.IsOK()) {
      return st;
    }
  }
  return s->origin->inner().Fcntl(arg, handler, timeout);
}

XRootDStatus FerryFile::Visa(ResponseHandler* handler, uint16_t timeout) {
  auto s = state_;
  if (!s || !s->open) {
    return NotOpen();
  }
  return WithOrigin(s, handler,
                    [s, handler, timeout] { return s->origin->inner().Visa(handler, timeout); });
}

bool FerryFile::IsOpen() const {
  return state_ && state_->open;
}

bool FerryFile::SetProperty(const std::string& name, const std::string& value) {
  if (!state_) {
    pending_properties_.emplace_back(name, value);  // applied to the inner file at Open
    return true;
  }
  return state_->origin->inner().SetProperty(name, value);
}

bool FerryFile::GetProperty(const std::string& name, std::string& value) const {
  if (!state_) {
    return false;
  }
  // Properties such as LastURL describe the connection: open it if the cache has not needed to.
  if (!state_->origin->is_open() && state_->open) {
    (void)state_->origin->EnsureOpen();
  }
  return state_->origin->inner().GetProperty(name, value);
}

}  // namespace ferry::plugin
