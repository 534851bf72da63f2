// ByteSource: random-access bytes with a vectored read and request counters.
//
// Every reader in ferry (ROOT files, the cache, the replica builder, the event store) reads
// through this interface, so one counter set tells how many requests and bytes a job cost,
// whatever is underneath (pread, mmap, XRootD, the cache).
//
// Contract:
// - ReadAt fills all of dest or fails; a range past the end is kShortRead.
// - ReadV reads many ranges in one request where the source supports it; every request gets
//   its own status; the returned Status is the first failure (or OK).
// - Implementations are thread-safe for concurrent reads (pread, mmap and XrdCl all are);
//   counters are atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/result.h"

namespace ferry::io {

struct ReadRequest {
  uint64_t offset = 0;
  std::span<uint8_t> dest;
  Status status;  // set by ReadV
};

struct IoStats {
  uint64_t read_calls = 0;    // ReadAt calls
  uint64_t vector_calls = 0;  // ReadV calls
  uint64_t chunks = 0;        // ranges read (a ReadAt is one chunk)
  uint64_t bytes = 0;         // bytes delivered
  uint64_t requests() const { return read_calls + vector_calls; }
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // Size in bytes, fixed for the lifetime of the source.
  virtual uint64_t size() const = 0;
  // A name for messages (path or URL without credentials).
  virtual const std::string& name() const = 0;

  Status ReadAt(uint64_t offset, std::span<uint8_t> dest);
  Status ReadV(std::span<ReadRequest> requests);

  // Zero-copy access for memory-resident sources (mmap, memory); nullopt otherwise. The view is
  // valid while the source lives.
  virtual std::optional<std::span<const uint8_t>> View(uint64_t offset, size_t size) const;

  IoStats stats() const;
  void ResetStats();

 protected:
  // Implementations: read exactly dest.size() bytes (the range was checked against size()).
  virtual Status DoReadAt(uint64_t offset, std::span<uint8_t> dest) = 0;
  // Default: DoReadAt per request. Sources with a native vector read override this.
  virtual void DoReadV(std::span<ReadRequest> requests);

 private:
  std::atomic<uint64_t> read_calls_{0};
  std::atomic<uint64_t> vector_calls_{0};
  std::atomic<uint64_t> chunks_{0};
  std::atomic<uint64_t> bytes_{0};
};

// Checks [offset, offset+size) against a source size; kShortRead names the source.
Status CheckRange(const std::string& name, uint64_t source_size, uint64_t offset, uint64_t size);

}  // namespace ferry::io
