// ProxyFile: one file of ferry's site proxy — the XrdOssDF that XrdOfs opens when a client opens
// a path. Reads are served by the cache engine (cache::CachedFile over an XrdOrigin, the XrdCl
// channels of the client plug-in): hits from the page store, misses planned, joined and fetched
// from the origin, stored behind the reader's back.
//
// - Read, ReadV (kXR_readv: XrdXrootd hands over at most readv_ior_max bytes per call) and pgRead
//   run in the calling xrootd thread. pgRead's checksums of whole cached pages are the page
//   store's own CRC32Cs (CachedFile::SegmentCrcs), computed only for partial pages and misses.
// - Asynchronous reads (XrdXrootd splits kXR_read and kXR_pgread into 64 KiB aio segments, up
//   to 8 per link at once) are queued per file and served in batches by the service's workers:
//   the segments of one request arrive together and become one CachedFile::ReadV, so their
//   misses become one planned origin request instead of one per segment.
// - Errors are negative errno values, as XrdOss requires: the origin's own error (ENOENT,
//   EACCES, ETIME, EIO) when it failed; cache faults never surface (the engine fails open).
// - An open whose opaque part asks for ferry.only_if_cached=1 reads held bytes only
//   (cached_only.h): no origin handle, no read-ahead, ENODATA for a byte not held.
// - Writes, truncation and write-mode opens are refused with EROFS: the proxy is read-only.
// - Close() waits for queued asynchronous reads, closes the cache handle (its pages are
//   published by the write-behind thread) and appends the file's access record.
//
// Lifetime: XrdOfs creates one ProxyFile per open handle (it may share a handle between
// clients that open the same path) and deletes it after Close(). Mutable state lives in a
// shared FileState that queued tasks keep alive.
// Thread-safety: XrdOfs may call the read methods concurrently from many threads.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>

#include <XrdOss/XrdOss.hh>

namespace ferry::proxy {

class ProxyService;
struct FileState;
}  // namespace ferry::proxy

namespace ferry::plugin {
class XrdOrigin;
}  // namespace ferry::plugin

namespace ferry::proxy {

class ProxyFile final : public XrdOssDF {
 public:
  ProxyFile(ProxyService& service, const char* trace_id);
  ~ProxyFile() override;
  ProxyFile(const ProxyFile&) = delete;
  ProxyFile& operator=(const ProxyFile&) = delete;

  int Open(const char* path, int oflag, mode_t mode, XrdOucEnv& env) override;
  int Fstat(struct stat* buf) override;
  ssize_t Read(off_t offset, size_t size) override;  // a pre-read hint: nothing to do
  ssize_t Read(void* buffer, off_t offset, size_t size) override;
  int Read(XrdSfsAio* aiop) override;
  ssize_t ReadRaw(void* buffer, off_t offset, size_t size) override;
  ssize_t ReadV(XrdOucIOVec* readV, int rdvcnt) override;
  ssize_t pgRead(void* buffer, off_t offset, size_t rdlen, uint32_t* csvec, uint64_t opts) override;
  int pgRead(XrdSfsAio* aioparm, uint64_t opts) override;
  int Close(long long* retsz = nullptr) override;
  // Not a descriptor: the zero-copy token of an open file whose entry held bytes at open
  // (zero_copy.h), which ProxySfs turns into sendfile service; -1 otherwise.
  int getFD() override { return zero_copy_token_; }

  // Read-only: every modification is EROFS.
  ssize_t Write(const void*, off_t, size_t) override { return -EROFS; }
  int Write(XrdSfsAio*) override { return -EROFS; }
  ssize_t pgWrite(void*, off_t, size_t, uint32_t*, uint64_t) override { return -EROFS; }
  int pgWrite(XrdSfsAio*, uint64_t) override { return -EROFS; }
  int Ftruncate(unsigned long long) override { return -EROFS; }
  int Fchmod(mode_t) override { return -EROFS; }
  int Fsync() override { return 0; }

 private:
  // An idle origin handle of `url` (idle_pool.h), else a new one (opened lazily).
  std::shared_ptr<plugin::XrdOrigin> OriginFor(const std::string& url);

  ProxyService& service_;
  std::shared_ptr<FileState> state_;
  int zero_copy_token_ = -1;
};

}  // namespace ferry::proxy
