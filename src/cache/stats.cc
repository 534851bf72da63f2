#include "cache/stats.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/fd.h"
#include "cache/dir_access.h"
#include "cache/lock_file.h"

namespace ferry::cache {
namespace {

constexpr char kStatsMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'S', 'T', 'S'};
constexpr uint32_t kStatsVersion = 1;
// Counters a stats file may hold: newer versions of ferry add counters, older ones ignore them.
constexpr uint32_t kMaxStoredCounters = 48;

}  // namespace

std::vector<uint8_t> EncodeStatsFile(const CounterValues& v) {
  std::vector<uint8_t> out(16 + 8 * kCounterCount + 4);
  std::memcpy(out.data(), kStatsMagic, 8);
  StoreLE<uint32_t>(out.data() + 8, kStatsVersion);
  StoreLE<uint32_t>(out.data() + 12, static_cast<uint32_t>(kCounterCount));
  for (size_t i = 0; i < kCounterCount; ++i) {
    StoreLE<uint64_t>(out.data() + 16 + 8 * i, v[i]);
  }
  const size_t body = 16 + 8 * kCounterCount;
  StoreLE<uint32_t>(out.data() + body, crc32c::Value(out.data(), body));
  return out;
}

Result<CounterValues> DecodeStatsFile(std::span<const uint8_t> bytes) {
  const uint8_t* buf = bytes.data();
  if (bytes.size() < 16 + 4 || std::memcmp(buf, kStatsMagic, 8) != 0
      || LoadLE<uint32_t>(buf + 8) != kStatsVersion) {
    return CorruptionError("not a stats file of version " + std::to_string(kStatsVersion));
  }
  const auto count = LoadLE<uint32_t>(buf + 12);
  if (count > kMaxStoredCounters) {
    return CorruptionError("stats file with " + std::to_string(count) + " counters");
  }
  const size_t body = 16 + 8 * static_cast<size_t>(count);
  if (bytes.size() != body + 4 || LoadLE<uint32_t>(buf + body) != crc32c::Value(buf, body)) {
    return CorruptionError("stats file: wrong size or checksum");
  }
  CounterValues v{};
  for (size_t i = 0; i < std::min<size_t>(count, kCounterCount); ++i) {
    v[i] = LoadLE<uint64_t>(buf + 16 + 8 * i);
  }
  return v;
}

std::string_view CounterName(Counter c) {
  switch (c) {
    case Counter::kHits:
      return "hits";
    case Counter::kMisses:
      return "misses";
    case Counter::kBytesFromCache:
      return "bytes_from_cache";
    case Counter::kBytesFromOrigin:
      return "bytes_from_origin";
    case Counter::kOriginRequests:
      return "origin_requests";
    case Counter::kOriginChunks:
      return "origin_chunks";
    case Counter::kCrcFailures:
      return "crc_failures";
    case Counter::kFailopenEvents:
      return "failopen_events";
    case Counter::kAdmissionsDeclined:
      return "admissions_declined";
    case Counter::kEvictions:
      return "evictions";
    case Counter::kWritesDropped:
      return "writes_dropped";
    case Counter::kRetries:
      return "retries";
    case Counter::kBytesFromReplica:
      return "bytes_from_replica";
    case Counter::kReplicaReads:
      return "replica_reads";
    case Counter::kReplicaFaults:
      return "replica_faults";
    case Counter::kDiskReads:
      return "disk_reads";
    case Counter::kPrefetchBytes:
      return "prefetch_bytes";
    case Counter::kPrefetchUnusedBytes:
      return "prefetch_unused_bytes";
    case Counter::kPrefetchHits:
      return "prefetch_hits";
    case Counter::kBypassedBytes:
      return "bypassed_bytes";
    case Counter::kAccessChecks:
      return "access_checks";
    case Counter::kAccessRefused:
      return "access_refused";
    case Counter::kNextFilesWarmed:
      return "next_files_warmed";
    case Counter::kNextFilesAdopted:
      return "next_files_adopted";
    case Counter::kJoinedFetches:
      return "joined_fetches";
    case Counter::kCount:
      break;
  }
  return "?";
}

CounterValues Counters::Snapshot() const {
  CounterValues v{};
  for (size_t i = 0; i < kCounterCount; ++i) {
    v[i] = values_[i].load(std::memory_order_relaxed);
  }
  return v;
}

namespace {

// Reads and validates DIR/stats; the caller holds the stats lock (or accepts a torn read).
Result<CounterValues> ReadStatsUnlocked(const std::string& cache_dir) {
  CounterValues v{};
  const std::string path = cache_dir + "/stats";
  auto fd = Fd::Open(path, O_RDONLY);
  if (!fd) {
    if (fd.error().code() == ErrorCode::kNotFound) {
      return v;
    }
    return std::move(fd).error();
  }
  // One more byte than the largest file: a longer file is refused, not read in part.
  uint8_t buf[16 + 8 * kMaxStoredCounters + 4 + 1];
  const ssize_t n = ::pread(fd->get(), buf, sizeof buf, 0);
  if (n < 0) {
    return IoError("cannot read " + path, errno);
  }
  return FERRY_TRY_CTX(DecodeStatsFile(std::span<const uint8_t>(buf, static_cast<size_t>(n))),
                       path);
}

Status WriteStatsUnlocked(const std::string& cache_dir, const CounterValues& values) {
  // Rewritten in place: the file's block stays allocated, so counters still reach the disk
  // when the cache's filesystem is full. A torn write fails the CRC and restarts at zero.
  const std::string path = cache_dir + "/stats";
  std::vector<uint8_t> bytes = EncodeStatsFile(values);
  Fd fd = FERRY_TRY(OpenCacheFile(path, O_WRONLY));
  FERRY_TRY(PwriteFull(fd.get(), bytes.data(), bytes.size(), 0));
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes.size())) != 0) {
    return IoError("truncate " + path, errno);
  }
  return fd.Close();
}

constexpr int kStatsLockTimeoutMs = 2000;

}  // namespace

Result<CounterValues> ReadStatsFile(const std::string& cache_dir) {
  // Writers rewrite the file in place under the exclusive stats lock; a shared lock keeps a
  // reader from seeing a half-written file. Where the lock file cannot be opened (a read-only
  // cache directory), a torn read is retried a few times instead.
  auto lock = LockFile::Open(cache_dir + "/stats.lock");
  if (lock) {
    FERRY_TRY(lock->Lock(0, /*exclusive=*/false, kStatsLockTimeoutMs));
    return ReadStatsUnlocked(cache_dir);
  }
  Result<CounterValues> v = ReadStatsUnlocked(cache_dir);
  for (int attempt = 0; attempt < 5 && !v && v.error().code() == ErrorCode::kCorruption;
       ++attempt) {
    ::usleep(20000);
    v = ReadStatsUnlocked(cache_dir);
  }
  return v;
}

Status WriteStatsFile(const std::string& cache_dir, const CounterValues& values) {
  LockFile lock = FERRY_TRY(LockFile::Open(cache_dir + "/stats.lock"));
  FERRY_TRY(lock.Lock(0, /*exclusive=*/true, kStatsLockTimeoutMs));
  return WriteStatsUnlocked(cache_dir, values);
}

Status EnsureStatsFile(const std::string& cache_dir) {
  struct stat st = {};
  if (::stat((cache_dir + "/stats").c_str(), &st) == 0) {
    return OkStatus();
  }
  LockFile lock = FERRY_TRY(LockFile::Open(cache_dir + "/stats.lock"));
  FERRY_TRY(lock.Lock(0, /*exclusive=*/true, kStatsLockTimeoutMs));
  if (::stat((cache_dir + "/stats").c_str(), &st) == 0) {
    return OkStatus();
  }
  return WriteStatsUnlocked(cache_dir, CounterValues{});
}

Status Counters::MergeInto(const std::string& cache_dir) {
  MutexLock guard(merge_mu_);
  const CounterValues now = Snapshot();
  if (now == merged_) {
    return OkStatus();
  }
  LockFile lock = FERRY_TRY(LockFile::Open(cache_dir + "/stats.lock"));
  FERRY_TRY(lock.Lock(0, /*exclusive=*/true, kStatsLockTimeoutMs));
  auto on_disk = ReadStatsUnlocked(cache_dir);
  CounterValues total = on_disk ? *on_disk : CounterValues{};  // a bad file restarts at zero
  for (size_t i = 0; i < kCounterCount; ++i) {
    total[i] += now[i] - merged_[i];
  }
  FERRY_TRY(WriteStatsUnlocked(cache_dir, total));
  merged_ = now;
  return OkStatus();
}

}  // namespace ferry::cache
