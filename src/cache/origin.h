// Origin: where the cache gets bytes it does not hold. The cache core never includes an XRootD
// header; the XrdCl plug-in implements Origin over XrdCl::File, tests use MemoryOrigin.
//
// Contract:
// - Stat() returns the remote file's size and modification time. It may contact the remote
//   side (a lazily opened origin opens here); errors are the origin's own.
// - Read() performs every OriginRead, concurrently where the implementation can, each on its
//   channel (0 <= channel < channels()), and blocks until all finished. Every range gets its
//   own status. The cache only asks for ranges inside [0, size).
// - Error classes the cache relies on: kTimeout and kIo are transient (retried with backoff);
//   anything else (kRemote, kNotFound, kPermission, ...) is final and is handed to the caller.
// - Implementations are thread-safe: the cache calls Read() from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/result.h"
#include "io/byte_source.h"

namespace ferry::cache {

struct OriginInfo {
  uint64_t size = 0;
  int64_t mtime = 0;  // seconds since the epoch
};

struct OriginRead {
  size_t channel = 0;
  std::span<io::ReadRequest> ranges;
};

class Origin {
 public:
  virtual ~Origin() = default;

  virtual Result<OriginInfo> Stat() = 0;
  virtual void Read(std::span<OriginRead> reads) = 0;
  // Connections the origin can use in parallel (>= 1).
  virtual size_t channels() const { return 1; }
  // Whether a channel is ready now (channel 0 always is once Stat() succeeded).
  virtual bool channel_ready(size_t channel) const { return channel == 0; }
  // The cache has concurrent requests for this origin: get the other channels ready (may
  // return before they are). Idempotent.
  virtual void PrepareChannels() {}
};

// True for error classes worth retrying (see the contract above).
inline bool IsTransient(const Error& e) {
  return e.code() == ErrorCode::kTimeout || e.code() == ErrorCode::kIo;
}

}  // namespace ferry::cache
