// Settings of the client cache, from the XrdCl plug-in conf file keys, overridable by
// FERRY_CACHE_<KEY> environment variables (upper-case key), e.g. FERRY_CACHE_DIR=/scratch/c.
//
//   key            default   meaning
//   dir            (none)    cache directory; without it every read passes through
//   max_size       100G      size cap of the directory (entries' allocated bytes)
//   min_free       1G        free-space floor of the filesystem
//   max_entries    0         most entries (files cached, a few inodes each); 0: no cap
//   min_free_inodes 10000    free-inode floor of the filesystem (statvfs f_favail): many small
//                            files fill an inode table long before its disk; 0: none
//   page_size      4096      page size of new entries (power of two, 512..1M)
//   round_pages    0         1: fetch whole pages instead of the requested bytes only
//   iogap          512       bridge gaps up to this many bytes between fetched runs
//   max_chunks     1024      chunks per vector read (XRootD limit 1024)
//   max_chunk      2097136   bytes per chunk (XRootD readv_ior_max default)
//   max_request    16M       bytes per vector read; larger misses are split and spread
//   channels       1         origin connections per file (vector reads spread over them;
//                            more than one only for an origin slow to serve one connection's
//                            reads: each extra connection starts in TCP slow start, and on a
//                            40 ms / 1 Gbit/s path a cold in-order pass took 1.52-1.68 s with 2
//                            against 1.39-1.52 s with 1, bbr and cubic alike)
//   writeback      64M       bound of the write-behind queue; beyond it pages are not cached
//   writeback_wait_ms 0      how long a fetch waits for room in that queue before it is not
//                            cached (writer.h; 0: not at all; the site proxy: 1000)
//   publish_ms     1000      publish a dirty index at most this often (and at close)
//   sync           1         fsync data and index before publishing
//   retries        3         extra attempts for transient origin errors
//   backoff_ms     50        first retry delay (doubles, +-50% jitter, capped at 2 s)
//   lock_timeout_ms 2000     longest wait for an entry lock (then fail-open)
//   revalidate_s   86400     re-check the origin's size/mtime when older than this (0: always)
//   url_params     (empty)   comma list of query parameters kept in the cache key
//   workers        16        plug-in threads serving misses
//   replica        auto      replica tier (docs/format/replica.md): auto = build replicas of ROOT
//                            files in the background after a pass; manual = only with
//                            `ferry cache replica build`; off = neither build nor serve them
//   replica_codec  auto      codec of replica baskets: auto (measured on this machine), zstd:N,
//                            lz4, none
//   replica_budget auto      replica baskets may take this % of the originals' bytes; auto:
//                            150 for LZMA originals, 100 for the others
//   replica_builder (found)  the ferry binary that builds replicas in the background; default:
//                            ../bin/ferry beside the plug-in library
//   readahead      auto      TTree-aware read-ahead of the client plug-in (file_ahead.h): auto =
//                            on for ROOT files read in a pattern; off. In a site proxy, off
//                            also turns its ROOT read-ahead off (lookahead 0)
//   readahead_max  128M      most bytes read-ahead may have in flight or fetched and not yet
//                            read, per process (also a file's largest window)
//   readahead_next auto      open the next file of a directory ahead of a reader that opens
//                            them in order (readahead/open_sequence.h): auto | off
//   bypass         auto      bulk readers (copy tools; a handle reading most of a large file in
//                            order) read through without caching (bulk_detect.h): auto | off
//   bypass_fraction 25%      share of a file a handle reads in order, in large reads from its
//                            start, to count as a copy (25, 25% or 0.25; 1% to 100%)
//   bypass_tools   (list)    executables (or scripts run by an interpreter) that are copy tools:
//                            xrdcp,xrdcopy,hadd,gfal-copy,gfal-cat,xrdadler32,davix-get,rucio
//   shared         (empty)   empty: a private cache (dir 0700, files 0600, owned by the user);
//                            GROUP: the group cache of GROUP (setgid 2770, files 0660), where a
//                            user is served a cached file only once the origin let that user
//                            open it (dir_access.h, access_confirm.h)
//   cache_key_file (empty)   a 32-byte master key file (mode 0600): entries are encrypted at rest
//                            (docs/format/page-store.md, "Encryption at rest"); replicas are then
//                            not kept. Empty: no encryption
//   shared_reauth  3600      seconds an origin's yes for (user, file) is trusted in a group cache
//                            (0: ask the origin at every open)
//
// Thread-safety: a Config is a value.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "fetch/planner.h"

namespace ferry::cache {
class MasterKey;
class ReplicaHooks;
}  // namespace ferry::cache

namespace ferry::readahead {
class Prefetcher;
}  // namespace ferry::readahead

namespace ferry::cache {

enum class ReplicaMode : uint8_t { kAuto, kManual, kOff };

struct Config {
  std::string dir;
  uint64_t max_bytes = 100ull << 30;
  uint64_t min_free_bytes = 1ull << 30;
  uint64_t max_entries = 0;  // 0: no cap
  uint64_t min_free_inodes = 10000;
  uint32_t page_size = 4096;
  bool round_to_pages = false;
  uint64_t iogap = 512;
  uint32_t max_chunks = 1024;
  uint32_t max_chunk_bytes = 2097136;
  uint64_t max_request_bytes = 16ull << 20;
  uint32_t channels = 1;
  uint64_t writeback_bytes = 64ull << 20;
  uint32_t writeback_wait_ms = 0;
  uint32_t publish_ms = 1000;
  bool sync = true;
  uint32_t retries = 3;
  uint32_t backoff_ms = 50;
  uint32_t lock_timeout_ms = 2000;
  int64_t revalidate_s = 86400;
  std::vector<std::string> url_params;
  uint32_t workers = 16;
  ReplicaMode replica = ReplicaMode::kAuto;
  std::string replica_codec = "auto";
  uint32_t replica_budget_percent = 0;  // 0: auto
  std::string replica_builder;
  bool readahead = true;
  // Shared by the files being read (a window each of 2x the loaded path's bandwidth-delay
  // product: ~20 MB at 40 ms / 1 Gbit/s) and the files opened ahead (seeds and a window each,
  // up to half). At 64 MB, `agc --opens 1` (two files read, 8 ahead) left its file waiting for
  // room between fetches: 40 files at 40 ms / 1 Gbit/s, the link carried 98-102 MB/s in the
  // transfer phases against 112 at 128 MB (7.8 s against 7.5 s).
  uint64_t readahead_max_bytes = 128ull << 20;
  bool readahead_next = true;
  // Not conf keys: read-ahead's fetches at once per process, and while an application read
  // waits on a miss of its own (readahead/prefetcher.h); the site proxy sets both to
  // ferry.ahead_fetches. Equal, nothing is held back while a read waits. Holding read-ahead
  // to 2 then (as before issue 27) cost an in-order reader that outruns it (a python reader of
  // one vector read per cluster, I/O only) 8%: its misses are the read-ahead's next fetches,
  // and the warm next files' seeds waited too (5.2-5.4 s against 5.6-5.9 s, 40 files at
  // 40 ms / 1 Gbit/s); agc with 1 or 8 threads did not change.
  uint32_t readahead_fetches = 8;
  uint32_t readahead_fetches_app_waits = 8;
  bool bypass = true;
  uint32_t bypass_percent = 25;
  std::vector<std::string> bypass_tools = {"xrdcp",    "xrdcopy",    "hadd",      "gfal-copy",
                                           "gfal-cat", "xrdadler32", "davix-get", "rucio"};
  std::string shared;  // group of a group cache; empty: private
  int64_t shared_reauth_s = 3600;
  std::string key_file;  // cache_key_file
  // Not a conf key: the master key read from key_file (Cache::Create loads it; null: entries are
  // not encrypted, and encrypted ones are not opened).
  std::shared_ptr<const MasterKey> master_key;
  // Not a conf key: the replica tier (replica_hooks.h), plugged in by the host that creates the
  // cache (replica::Hooks()). Null: no replica is served or asked for and no access log is
  // kept, as with replica = off.
  std::shared_ptr<const ReplicaHooks> replica_hooks;
  // Not a conf key: tests inject a clock (nanoseconds, monotonic) so the capacity re-check and
  // the stats merge intervals pass without sleeping. Empty: the steady clock.
  std::function<int64_t()> clock_ns;
  // Not a conf key: eviction after the min_free floor was passed goes on until this many bytes
  // are free (the site proxy's per-disk low water mark, ferry.disk_low). 0: until min_free.
  uint64_t evict_to_free_bytes = 0;
  // Not a conf key: called with the error of every cache fault that makes an entry or an open
  // fail open (Entry::Fail, a failed entry open), from the thread that met it, possibly under
  // the entry's locks: it must not call back into the cache. The site proxy takes a failing
  // disk out of service with it (plugin/proxy/disk_set.h). Empty: faults are only counted.
  std::function<void(const Error&)> on_fault;
  // Not a conf key: read-ahead's fetch threads and budget shared by several caches of one
  // process (the site proxy's disks: one budget and one branch memory for all). Null: the
  // cache makes its own when a handle first asks for read-ahead.
  std::shared_ptr<readahead::Prefetcher> prefetcher;

  fetch::PlannerConfig planner() const;
};

// Applies `key = value` settings (unknown keys are ignored: the conf file also carries XrdCl's
// own url/lib/enable). Then, when `use_env`, FERRY_CACHE_<KEY> variables override. An invalid
// value is kInvalidArgument naming the key. The values of the keys only the replica tier reads
// (replica_codec) are checked by `tier` (ReplicaHooks::CheckSetting): a host that plugs a tier
// in passes it (replica::Hooks()); without one they are kept as written, for no replica is
// built from them.
Result<Config> ConfigFromMap(const std::map<std::string, std::string>& kv,
                             bool use_env,
                             const ReplicaHooks* tier = nullptr);

// Every key ConfigFromMap understands, for help texts and the conf file writer.
const std::vector<std::string>& ConfigKeys();

}  // namespace ferry::cache
