// What the cache asks of a replica tier (docs/format/replica.md), which lives above it
// (src/replica) and is plugged in by whoever creates the cache (the client plug-in, the site
// proxy, the CLI) through Config::replica_hooks. The cache keeps the parts that are its own:
// which layout a handle serves (fixed at open), which reads go into an entry's access log and
// when it is written, when an entry's reader is done with it. What a replica is, how its bytes
// are read and checked, the access log's bytes and how a build is started are the tier's.
// Without a tier the cache serves every file in its original layout and keeps no access log.
//
// Thread-safety: every member may be called from any thread at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "io/byte_source.h"

namespace ferry::cache {

class Counters;
class PageSealer;
struct Config;
struct EntryPaths;
struct IndexInfo;
struct VerifyReport;

// How a virtual file reads the original file's bytes: the handle's byte tier, then its origin
// (CachedFile). Requests lie inside [0, original size); statuses per request; `missed` is set
// when the origin was needed.
class OriginalReader {
 public:
  virtual Status ReadOriginal(std::span<io::ReadRequest> requests, bool* missed) = 0;

 protected:
  ~OriginalReader() = default;
};

// A layout of an entry's file other than the original (a published replica), open for reading.
// A handle that opened it keeps it until it closes.
class VirtualFile {
 public:
  virtual ~VirtualFile() = default;
  // Which layout this is (> 0): the access log says which one a read saw.
  virtual uint64_t generation() const = 0;
  virtual uint64_t size() const = 0;
  // Reads `requests` at this layout's offsets, each with its own status (the caller set them
  // ok); the original's bytes it needs through `original`, `missed` set when those needed the
  // origin. The tier counts what it serves in `counters` (bytes_from_replica, replica_reads,
  // replica_faults).
  virtual void Read(std::span<io::ReadRequest> requests,
                    OriginalReader& original,
                    Counters& counters,
                    bool* missed) const = 0;
};

class ReplicaHooks {
 public:
  virtual ~ReplicaHooks() = default;
  // The virtual file published for the entry at `paths` (`entry`: its URL, epoch, size and
  // mtime), read again only when the cache saw its files change. `sealer`: the entry's when it
  // is encrypted (its replica is sealed under its data key), else null; it outlives the
  // virtual file. kNotFound when there is none; another error when one exists but cannot be
  // served (the cache counts a replica fault and serves the original).
  virtual Result<std::shared_ptr<const VirtualFile>> OpenVirtual(
      const EntryPaths& paths, const IndexInfo& entry, const PageSealer* sealer) const = 0;
  // Appends to `out` the access log's record of one application read of `requests`, through a
  // layout of generation `generation` (0: the original file).
  virtual void EncodeAccess(uint64_t generation,
                            std::span<const io::ReadRequest> requests,
                            std::vector<uint8_t>& out) const = 0;
  // An entry's access log stops growing at this size (later reads are not recorded).
  virtual uint64_t access_log_max_bytes() const = 0;
  // A reader is done with entry `key` (its last close, or it moved past it: `still_open`) after
  // reading new bytes of a ROOT file, which are published: a layout may be built from them now
  // (replica = auto). Best effort, and returns at once. At a last close this process still
  // holds the entry's open lock for a moment (until the writer lets the entry go).
  virtual void RequestBuild(const Config& config,
                            const std::string& key,
                            bool still_open) const = 0;
  // `ferry cache verify`: checks the entry's published layout, if any, against `entry` and
  // its own checksums (a sealed one's tags, with `sealer`, the encrypted entry's) into the
  // report's replica fields. Modifies nothing.
  virtual void Verify(const EntryPaths& paths,
                      const IndexInfo& entry,
                      const PageSealer* sealer,
                      VerifyReport& report) const = 0;
  // Checks the value of a conf key that the cache keeps for the tier (Config::replica_codec):
  // InvalidArgument saying what it must be. ConfigFromMap asks when a host gives it the tier.
  virtual Status CheckSetting(std::string_view key, std::string_view value) const = 0;
};

}  // namespace ferry::cache
