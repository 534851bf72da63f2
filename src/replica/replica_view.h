// ReplicaView: one published replica of a cache entry, open for reading — its manifest and
// the descriptor of its data file. A handle that opened the virtual file keeps its view (and so
// its layout and its data file, even after a rebuild removed that file) until it closes.
//
// The view answers the parts of the virtual file that are not the original's bytes: the patches
// over the original region, the tree-record slots, and where each extent lies in the data file
// (docs/format/replica.md). It is the cache's VirtualFile (cache/replica_hooks.h): Read
// (replica_read.cc) reads extents, checks their CRCs (a sealed replica: decrypts them and checks
// their tags) and rebuilds a bad one from the original
// bytes, which it reads through the handle (OriginalReader).
//
// The data file is read ahead of the reader (ReadAhead): a pass reads it front to back, since
// its layout is the access order, and the page cache may have dropped it since the build wrote
// it (a VM host's proactive reclaim drops cold page-cache pages), when every run of extents would
// wait for the disk in turn.
//
// Thread-safety: immutable after Open() but for the read-ahead mark (atomic); shared by
// shared_ptr<const ReplicaView>; Read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "base/fd.h"
#include "base/result.h"
#include "cache/entry_store.h"
#include "cache/page_index.h"
#include "cache/replica_hooks.h"
#include "replica/replica_manifest.h"

namespace ferry::replica {

class ReplicaView final : public cache::VirtualFile {
 public:
  // Loads KEY.rpm and opens its data file. kNotFound when there is no manifest; kCorruption
  // when it does not validate, belongs to another incarnation of the entry (epoch, size or
  // mtime differ from `entry`), or its data file is missing or short; kUnsupported when it was
  // written with another version of its codec's library (a rebuilt extent would not match).
  // A data file removed by a newer build between the manifest's load and the file's open is
  // not an error: the newer manifest is loaded. `after_manifest` runs between the two (tests).
  // `sealer`: the entry's page sealer when it is encrypted (its replica is sealed, and each
  // extent is decrypted and authenticated as it is read), else null.
  static Result<std::shared_ptr<const ReplicaView>> Open(
      const cache::EntryPaths& paths,
      const cache::IndexInfo& entry,
      const cache::PageSealer* sealer,
      const std::function<void()>& after_manifest = {});

  const ReplicaManifest& manifest() const { return manifest_; }
  uint64_t generation() const override { return manifest_.generation; }
  uint64_t size() const override { return manifest_.virtual_size; }
  uint64_t origin_size() const { return manifest_.origin_size; }
  uint64_t virtual_size() const { return manifest_.virtual_size; }
  uint64_t baskets_begin() const { return manifest_.baskets_begin; }
  int data_fd() const { return data_.get(); }
  // The sealer of this generation's extents (replica_seal.h); null for a plain replica.
  const ReplicaSealer* sealer() const { return sealer_.get(); }

  // Asks the kernel to read the data file ahead of `file_offset`, the end of a run just read:
  // kReadAheadBytes past the mark advised so far, once the reader is within half of that of it
  // (posix_fadvise WILLNEED: pages the page cache holds cost a lookup). Open advises the start.
  void ReadAhead(uint64_t file_offset) const;
  static constexpr uint64_t kReadAheadBytes = 16ull << 20;

  // Overwrites the parts of `dest` (holding the original bytes at `offset`) that patches cover.
  void ApplyPatches(uint64_t offset, std::span<uint8_t> dest) const;
  // Fills `dest` with the virtual bytes at `offset` for offsets in [origin_size, baskets_begin):
  // tree records and the zeros after them in their slots.
  void ReadHead(uint64_t offset, std::span<uint8_t> dest) const;

  // The virtual file's bytes (replica_read.cc): a request is cut at origin_size, the part
  // before read through `original` with the patches copied over it, the part after from the
  // tree records and the data file.
  void Read(std::span<io::ReadRequest> requests,
            cache::OriginalReader& original,
            cache::Counters& counters,
            bool* missed) const override;

 private:
  ReplicaView() = default;

  ReplicaManifest manifest_;
  std::unique_ptr<const ReplicaSealer> sealer_;
  Fd data_;
  mutable std::atomic<uint64_t> advised_until_{0};  // ReadAhead's mark, in the data file
};

// Reads and decodes KEY.rpm without opening its data file (status, builder). kNotFound when
// absent; `sealer` as for ReplicaManifest::Decode.
Result<ReplicaManifest> LoadManifest(const cache::EntryPaths& paths,
                                     const cache::PageSealer* sealer = nullptr);

}  // namespace ferry::replica
