// Cache counters: kept per process in atomics, merged into DIR/stats so that `ferry cache stats`
// reports every process that used the directory. File layout: docs/format/page-store.md.
//
// Thread-safety: Counters may be bumped from any thread (relaxed atomics, no allocation).
// MergeInto() serialises processes with an OFD lock on DIR/stats.lock.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"

namespace ferry::cache {

enum class Counter : uint8_t {
  kHits,                 // ranges served entirely from the cache
  kMisses,               // ranges that needed the origin (at least partly)
  kBytesFromCache,       // bytes copied to applications from the cache
  kBytesFromOrigin,      // bytes received from origins (including bridged gaps)
  kOriginRequests,       // read / vector-read requests sent to origins
  kOriginChunks,         // chunks in those requests
  kCrcFailures,          // cached pages whose CRC did not match (refetched)
  kFailopenEvents,       // cache faults that turned a handle into a pass-through
  kAdmissionsDeclined,   // new entries refused because the cache is full
  kEvictions,            // entries evicted
  kWritesDropped,        // fetched pages not cached (write-behind full, over capacity)
  kRetries,              // origin requests retried after a transient error
  kBytesFromReplica,     // bytes copied to applications from replicas (docs/format/replica.md)
  kReplicaReads,         // read system calls on replica data files
  kReplicaFaults,        // replica extents that failed their CRC or a read (rebuilt, counted)
  kDiskReads,            // read system calls on the byte tier's data and fragment files
  kPrefetchBytes,        // bytes read-ahead fetched from origins (part of bytes_from_origin)
  kPrefetchUnusedBytes,  // ... of those, bytes the application did not read (stale, or unread
                         // when its handle closed)
  kPrefetchHits,         // application reads of baskets read-ahead fetched (landed or in flight)
  kBypassedBytes,        // bytes bulk readers (copies) read from origins without caching them
  kAccessChecks,         // group cache: opens at the origin that confirmed a user's right to a
                         // cached file (access_confirm.h), at most one per user, file and
                         // shared_reauth
  kAccessRefused,        // ... of those, the origin refused (the user got its error, no byte)
  kNextFilesWarmed,      // files opened ahead of their reader (readahead/open_sequence.h)
  kNextFilesAdopted,     // ... of those, opened by the reader within the time they were kept
  kJoinedFetches,        // misses that waited for a fetch already in flight (another reader's
                         // or read-ahead's) instead of asking the origin for the same bytes
  kCount
};
inline constexpr size_t kCounterCount = static_cast<size_t>(Counter::kCount);

// JSON field name of a counter ("bytes_from_cache").
std::string_view CounterName(Counter c);

using CounterValues = std::array<uint64_t, kCounterCount>;

class Counters {
 public:
  void Add(Counter c, uint64_t n = 1) {
    values_[static_cast<size_t>(c)].fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Get(Counter c) const {
    return values_[static_cast<size_t>(c)].load(std::memory_order_relaxed);
  }
  CounterValues Snapshot() const;

  // Adds what this process counted since its last merge to DIR/stats. Best effort: on error
  // the delta stays pending for the next merge.
  Status MergeInto(const std::string& cache_dir);

 private:
  std::array<std::atomic<uint64_t>, kCounterCount> values_{};
  Mutex merge_mu_;
  CounterValues merged_ FERRY_GUARDED_BY(merge_mu_){};  // part of values_ already in DIR/stats
};

// The bytes of DIR/stats (format: docs/format/page-store.md) and their parser, which validates
// magic, version, counter count, size and CRC32C (kCorruption otherwise). Counters the file
// does not hold are 0; counters beyond kCounterCount (a newer ferry's) are ignored.
std::vector<uint8_t> EncodeStatsFile(const CounterValues& values);
Result<CounterValues> DecodeStatsFile(std::span<const uint8_t> bytes);
// Reads DIR/stats (all zeros when absent). kCorruption when it does not validate.
Result<CounterValues> ReadStatsFile(const std::string& cache_dir);
// Creates DIR/stats (zeros) when missing, so that its block exists before the disk fills up.
Status EnsureStatsFile(const std::string& cache_dir);
// Replaces DIR/stats (used by `ferry cache clear --stats` and tests).
Status WriteStatsFile(const std::string& cache_dir, const CounterValues& values);

}  // namespace ferry::cache
