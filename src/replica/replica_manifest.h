// ReplicaManifest: the description of one replica of a cache entry (`KEY.rpm`) — the virtual
// file's patches, tree records and extents, and what the build measured. Byte layout and the
// rules a reader checks: docs/format/replica.md.
//
// Decode() validates every field and rejects anything inconsistent with kCorruption; counts
// from the input are never trusted for an allocation its own length does not back.
// Thread-safety: a value type; a decoded manifest is shared read-only (ReplicaView).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "cache/page_seal.h"
#include "codec/compression.h"
#include "replica/replica_seal.h"

namespace ferry::replica {

inline constexpr uint32_t kReplicaVersion = 1;
inline constexpr uint32_t kReplicaHeaderBytes = 160;

struct ReplicaPatch {
  uint64_t offset = 0;  // in [0, origin_size)
  std::vector<uint8_t> bytes;
};

struct ReplicaRecord {
  uint64_t offset = 0;  // in [origin_size, baskets_begin)
  uint64_t slot_bytes = 0;
  std::vector<uint8_t> bytes;
};

// One re-encoded basket record in the data file.
struct ReplicaExtent {
  uint64_t offset = 0;  // virtual offset; data file offset = offset - baskets_begin
  uint32_t bytes = 0;
  uint32_t crc = 0;  // CRC32C of the bytes (0 in a sealed manifest: `tag` stands for it)
  uint64_t original_offset = 0;
  uint32_t original_bytes = 0;
  uint32_t tree = 0;  // index into trees
  uint32_t branch = 0;
  uint32_t basket = 0;
  codec::Setting setting{codec::Algorithm::kNone, 0};  // its payload's encoding
  // What the unit is: a TTree basket, or an RNTuple page (with or without its XXH3), whose
  // decompressed size is raw_bytes (a page has no header that says it).
  enum class Unit : uint16_t { kBasket = 0, kPage = 1, kPageWithChecksum = 3 };
  Unit unit = Unit::kBasket;
  uint32_t raw_bytes = 0;  // pages only
  // Relocated as the original stores it (stage 1): the original record's bytes, a basket's
  // fSeekKey aside; `setting` is then the original's algorithm (level 0). Otherwise re-encoded
  // with `setting` (stage 2).
  bool as_stored = false;
  SealTag tag{};  // a sealed manifest's: the extent's GCM tag (replica_seal.h)
  uint64_t end() const { return offset + bytes; }
};

struct ReplicaBranch {
  uint32_t tree = 0;
  std::string name;
};

// A calibration measurement of one codec on a sample of the hot baskets.
struct CodecRate {
  codec::Setting setting;
  uint64_t decode_bytes_per_s = 0;  // decompressed bytes per second
  uint64_t compressed_per_mib = 0;  // compressed bytes per 2^20 input bytes
};

struct ReplicaManifest {
  std::string url;
  uint64_t epoch = 0;
  uint64_t origin_size = 0;
  int64_t origin_mtime = 0;
  uint64_t generation = 0;
  uint64_t virtual_size = 0;
  uint64_t baskets_begin = 0;
  uint64_t data_bytes = 0;
  int64_t created_unix = 0;
  codec::Setting setting{codec::Algorithm::kNone, 0};  // the densest encoding (tree records)
  uint32_t zstd_version = 0;  // library versions the build used (a rebuilt extent must match)
  uint32_t lz4_version = 0;
  uint64_t original_bytes = 0;
  uint64_t build_cpu_ns = 0;
  uint64_t missing_baskets = 0;
  std::vector<ReplicaPatch> patches;    // sorted, disjoint
  std::vector<ReplicaRecord> records;   // sorted, disjoint
  std::vector<ReplicaExtent> extents;   // sorted, contiguous from baskets_begin
  std::vector<std::string> trees;       // tree paths
  std::vector<ReplicaBranch> branches;  // hot branches
  std::vector<CodecRate> rates;
  // The replica of an encrypted entry: its extents and these sections sealed (replica_seal.h)
  // under the key of (salt, generation).
  bool sealed = false;
  ReplicaSalt salt{};

  // A sealed manifest is encoded with `sealer` (of this manifest's salt and generation); a plain
  // one without.
  void Encode(std::vector<uint8_t>& out, const ReplicaSealer* sealer = nullptr) const;
  // `entry`: the entry's page sealer when it is encrypted, else null. A sealed manifest opens
  // only with the sealer of its entry (kCorruption when it does not authenticate, kPermission
  // without one); an encrypted entry accepts no plain manifest (kCorruption).
  static Result<ReplicaManifest> Decode(std::span<const uint8_t> bytes,
                                        const cache::PageSealer* entry = nullptr);
  // The sealer of this (sealed) manifest's generation.
  std::unique_ptr<const ReplicaSealer> Sealer(const cache::PageSealer& entry) const {
    return ReplicaSealer::Make(entry, salt, generation);
  }

  // Index of the extent holding virtual offset `offset`, or -1 (binary search, no allocation).
  long ExtentAt(uint64_t offset) const;
  // Checks the invariants Decode() checks (the builder calls it before publishing).
  Status Validate() const;
  // True when the codec libraries of this process are the ones the build used.
  bool LibrariesMatch() const;
  // Records this process's codec library versions.
  void SetLibraries();
  // Stage 1 (some unit relocated as stored, waiting to be re-encoded) or 2 (all re-encoded).
  int Stage() const;
};

}  // namespace ferry::replica
