// The sealing of an encrypted entry's replica (docs/format/replica.md, "Sealed replicas"): its
// extents and its manifest's sections encrypted with AES-256-GCM under a key of the generation,
// derived from the entry's data key, so that no byte of the file's content (units, rewritten
// metadata, names, checksums of plaintext) is in clear on disk, and an extent or manifest moved,
// swapped or altered fails.
//
//   replica key  HMAC-SHA256(data key, "ferry replica key\0" || salt (12) || u64 generation)
//   extent i     nonce: u64 i | u32 0
//                AAD (40): u64 entry key | u64 epoch | u64 generation | u64 virtual offset |
//                          u32 i | u32 bytes
//   manifest     one blob (every section after the URL), nonce: 12 bytes 0xff
//                AAD: u64 entry key | the manifest's bytes before the blob (header, URL)
//
// A build draws a new random salt for every data file it writes (every attempt), and writes
// each extent of it once: a (key, nonce) pair never seals two plaintexts, even where a
// generation number is used again (a replica removed and built anew).
//
// Thread-safety: immutable after construction; any number of threads (cache::GcmKey).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "cache/page_seal.h"

namespace ferry::replica {

inline constexpr size_t kReplicaSaltBytes = 12;
using ReplicaSalt = std::array<uint8_t, kReplicaSaltBytes>;
using SealTag = cache::GcmKey::Tag;

// A new random salt (RAND_bytes).
ReplicaSalt RandomReplicaSalt();

class ReplicaSealer {
 public:
  // The sealer of generation `generation` with `salt` of the entry `entry` seals.
  static std::unique_ptr<const ReplicaSealer> Make(const cache::PageSealer& entry,
                                                   const ReplicaSalt& salt,
                                                   uint64_t generation);
  ReplicaSealer(const ReplicaSealer&) = delete;
  ReplicaSealer& operator=(const ReplicaSealer&) = delete;
  ReplicaSealer(ReplicaSealer&&) = delete;
  ReplicaSealer& operator=(ReplicaSealer&&) = delete;
  ~ReplicaSealer() = default;

  // Extent `index` at virtual offset `offset`: `in` encrypted into `out` (may be in.data()).
  SealTag SealExtent(uint32_t index,
                     uint64_t offset,
                     std::span<const uint8_t> in,
                     uint8_t* out) const;
  // Decrypts in place; false (bytes zeroed) when it does not authenticate.
  bool OpenExtent(uint32_t index,
                  uint64_t offset,
                  std::span<uint8_t> bytes,
                  const SealTag& tag) const;
  // The same for an extent whose bytes lie in several buffers, `pieces` in order.
  bool OpenExtent(uint32_t index,
                  uint64_t offset,
                  std::span<const std::span<uint8_t>> pieces,
                  const SealTag& tag) const;
  // The manifest's sections, in place; `clear` is what precedes them (header and URL).
  SealTag SealManifest(std::span<const uint8_t> clear, std::span<uint8_t> sections) const;
  bool OpenManifest(std::span<const uint8_t> clear,
                    std::span<uint8_t> sections,
                    const SealTag& tag) const;

 private:
  using ExtentAad = std::array<uint8_t, 40>;
  ExtentAad MakeExtentAad(uint32_t index, uint64_t offset, size_t bytes) const;
  ReplicaSealer(const cache::KeyBytes& key, uint64_t entry_key, uint64_t epoch, uint64_t generation)
      : key_(key), entry_key_(entry_key), epoch_(epoch), generation_(generation) {}

  cache::GcmKey key_;
  uint64_t entry_key_;
  uint64_t epoch_;
  uint64_t generation_;
};

}  // namespace ferry::replica
