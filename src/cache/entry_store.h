// Files of the page store: where an entry's files live, reading and atomically publishing an
// index, and the directory-level helpers shared by the engine and `ferry cache`.
// Layout and rules: docs/format/page-store.md.
//
// Thread-safety: the free functions are safe to call concurrently; writers of one entry must
// hold its write lock (LockFile byte 1) around PublishIndex().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "cache/dir_access.h"
#include "cache/page_index.h"
#include "cache/page_seal.h"

namespace ferry::cache {

inline constexpr const char* kMarkerName = "ferry-cache";
inline constexpr const char* kMarkerText = "ferry page store 1\n";

struct EntryPaths {
  std::string subdir;  // DIR/entries/KK
  std::string base;    // DIR/entries/KK/KEY
  std::string idx() const { return base + ".idx"; }
  std::string data() const { return base + ".data"; }
  std::string frag() const { return base + ".frag"; }
  std::string lock() const { return base + ".lock"; }
  std::string pin() const { return base + ".pin"; }
  // Replica tier (docs/format/replica.md).
  std::string manifest() const { return base + ".rpm"; }
  std::string replica_data(uint64_t generation) const {
    return base + ".rpd." + std::to_string(generation);
  }
  std::string trace() const { return base + ".acc"; }
  std::string replica_status() const { return base + ".rps"; }
};

EntryPaths PathsFor(const std::string& cache_dir, const std::string& key);

// Creates DIR, DIR/entries and the marker file when missing: a new DIR is private (0700), or
// the group cache of `gid` (2770) for Sharing::kGroup; missing parents are made 0755. An
// existing DIR keeps its mode (dir_access.h checks it). kInvalidArgument when DIR exists, is not
// empty and has no marker (never scribble over someone else's directory).
Status PrepareCacheDir(const std::string& cache_dir,
                       Sharing sharing = Sharing::kPrivate,
                       gid_t gid = 0);
// True when DIR carries the page-store marker.
bool IsCacheDir(const std::string& cache_dir);

// Identity of an index file as last seen, to notice when another process published.
struct IndexStamp {
  ino_t ino = 0;
  int64_t mtime_ns = 0;
  off_t size = 0;
  bool operator==(const IndexStamp&) const = default;
};
// Stamp of the file at `path`; an all-zero stamp when it does not exist.
IndexStamp StampOf(const std::string& path);

// Reads and decodes an index. kNotFound when the file does not exist, kCorruption when it does
// not validate, kIo for read errors.
Result<PageIndex> LoadIndex(const std::string& path, IndexStamp* stamp = nullptr);

// Publishes an encoded index atomically: writes DIR/KEY.idx.tmp.PID, fsyncs it (when sync),
// renames it over KEY.idx and fsyncs the directory (when sync).
Status PublishIndexBytes(const EntryPaths& paths,
                         std::span<const uint8_t> encoded,
                         bool sync,
                         IndexStamp* stamp = nullptr);
// Encodes `index` into `scratch` and publishes it.
Status PublishIndex(const EntryPaths& paths,
                    const PageIndex& index,
                    bool sync,
                    std::vector<uint8_t>& scratch,
                    IndexStamp* stamp = nullptr);

// Removes an entry's files: index, data, fragment log, and its replica files (manifest, data,
// status, access trace); not the lock or pin. Missing files are fine.
Status RemoveEntryFiles(const EntryPaths& paths);
// Removes the replica data files KEY.rpd.G of every generation but `keep` (0: all). Best effort.
void RemoveReplicaData(const EntryPaths& paths, uint64_t keep);

// Removes the entry's temp files (KEY.idx.tmp.PID, KEY.rpm.tmp.PID, ...) whose writing process
// no longer exists: a process killed between writing one and renaming it leaves it behind.
// Best effort; another live process's temp file is never touched.
void RemoveStaleTemps(const EntryPaths& paths);

// Checks the bytes of full page `page` (or of fragment `f` of it) as read from disk against the
// index: the CRC32C, or for an encrypted entry (`sealer` not null) the seal, decrypting the bytes
// in place. False when they do not match (damaged, moved, or sealed for another entry or key):
// they must not be served (an encrypted entry's are zeroed).
bool CheckPageBytes(const PageIndex& index,
                    const PageSealer* sealer,
                    uint64_t page,
                    std::span<uint8_t> bytes);
bool CheckFragmentBytes(const PageSealer* sealer,
                        uint64_t page,
                        const Fragment& f,
                        std::span<uint8_t> bytes);

// Disk blocks (st_blocks * 512) of one file, 0 when missing.
uint64_t AllocatedBytes(const std::string& path);

// One entry found by scanning the directory.
struct EntryListing {
  std::string key;
  EntryPaths paths;
  uint64_t disk_bytes = 0;   // allocated bytes of idx + data + frag
  uint64_t inodes = 0;       // files of the entry (every one, lock and pin too)
  int64_t last_read_ns = 0;  // mtime of the lock file (else of the index)
  bool pinned = false;
  bool has_index = false;
};

// Lists every entry under DIR/entries (by its files; an entry without an index is listed so
// that leftovers can be cleaned). Sorted by key.
Result<std::vector<EntryListing>> ScanEntries(const std::string& cache_dir);

}  // namespace ferry::cache
