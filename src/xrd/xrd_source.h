// XrdSource: an io::ByteSource over an XRootD file (XrdCl::File), for root:// URLs.
//
// - Open() opens the file read-only and takes its size from the open response (Stat without
//   force: no extra round trip).
// - ReadAt() is XrdCl Read, split into pieces of at most `max_read_bytes`; a short answer
//   before the end is read again from where it stopped.
// - ReadV() is XrdCl VectorRead: ranges are cut into chunks of at most `max_chunk_bytes` and
//   grouped into requests of at most `max_chunks_per_request` chunks (XRootD's protocol limits
//   are 2097136 bytes and 1024 chunks); up to `max_requests_in_flight` requests are outstanding
//   at once. Data lands directly in the callers' buffers. Every range gets its own status: a
//   failed request fails exactly the ranges that had a chunk in it.
// - XrdCl client plug-ins are enabled by default, so a configured plug-in (the ferry cache)
//   serves the reads transparently; `enable_plugins = false` talks to the server directly.
// - Every XrdCl call carries `timeout_seconds`; XrdCl always answers within that (plus its
//   timeout resolution, 15 s by default), so no call here waits unboundedly.
// - Errors are ErrorCode::kRemote with the XRootD status text and the operation, and the
//   errno XRootD maps it to (ENOENT for a missing file, ETIMEDOUT for an expired request...).
//
// Thread-safety: reads may run concurrently from many threads (XrdCl::File is thread-safe).
// Lifetime: the destructor closes the file (bounded by the timeout).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "io/byte_source.h"

namespace XrdCl {  // NOLINT(readability-identifier-naming): XRootD's namespace, declared ahead
class File;
}  // namespace XrdCl

namespace ferry::xrd {

struct XrdSourceOptions {
  uint16_t timeout_seconds = 60;           // per XrdCl request (0 = XrdCl's default, 60 s)
  bool enable_plugins = true;              // use configured XrdCl client plug-ins
  uint32_t max_chunks_per_request = 1024;  // XrdProto::maxRvecsz
  uint32_t max_chunk_bytes = 2097136;      // XrdCl's default maximum readv element
  uint32_t max_read_bytes = 64u << 20;     // one Read request
  uint32_t max_requests_in_flight = 16;    // vector read requests outstanding per ReadV
};

// What went over the XrdCl API (after splitting), as opposed to ByteSource::stats(), which
// counts what callers asked for.
struct XrdWireStats {
  uint64_t read_requests = 0;    // XrdCl Read calls
  uint64_t vector_requests = 0;  // XrdCl VectorRead calls
  uint64_t vector_chunks = 0;    // chunks sent in vector reads
  uint64_t bytes = 0;            // bytes received
};

class XrdSource final : public io::ByteSource {
 public:
  static Result<std::unique_ptr<XrdSource>> Open(const std::string& url,
                                                 const XrdSourceOptions& options = {});
  ~XrdSource() override;
  XrdSource(const XrdSource&) = delete;
  XrdSource& operator=(const XrdSource&) = delete;

  uint64_t size() const override { return size_; }
  // The URL without user credentials and without the query (tokens live there).
  const std::string& name() const override { return name_; }
  // The URL as given to Open().
  const std::string& url() const { return url_; }
  const XrdSourceOptions& options() const { return options_; }
  XrdWireStats wire_stats() const;

 protected:
  Status DoReadAt(uint64_t offset, std::span<uint8_t> dest) override;
  void DoReadV(std::span<io::ReadRequest> requests) override;

 private:
  XrdSource(std::unique_ptr<XrdCl::File> file,
            uint64_t size,
            std::string url,
            const XrdSourceOptions& options);

  std::unique_ptr<XrdCl::File> file_;
  uint64_t size_;
  std::string url_;
  std::string name_;
  XrdSourceOptions options_;
  std::atomic<uint64_t> wire_reads_{0};
  std::atomic<uint64_t> wire_vectors_{0};
  std::atomic<uint64_t> wire_chunks_{0};
  std::atomic<uint64_t> wire_bytes_{0};
};

// "root://user:pw@host:port//path?authz=x" -> "root://host:port//path".
std::string RedactUrl(std::string_view url);

// One piece of a vector read after splitting: bytes [offset, offset+length) of the file go to
// requests[request].dest at byte `dest_offset`.
struct VectorChunk {
  uint64_t offset = 0;
  uint32_t length = 0;
  size_t request = 0;
  size_t dest_offset = 0;
};

// Splits ranges into chunks of at most max_chunk_bytes and groups them into batches of at most
// max_chunks. Empty ranges produce no chunk. Pure; exposed for tests.
std::vector<std::vector<VectorChunk>> PlanVectorRead(std::span<const io::ReadRequest> requests,
                                                     uint32_t max_chunk_bytes,
                                                     uint32_t max_chunks);

}  // namespace ferry::xrd
