#include "replica/replica_seal.h"

#include <openssl/rand.h>

#include <cstdlib>
#include <vector>

#include "base/endian.h"

namespace ferry::replica {
namespace {

constexpr char kKeyLabel[] = "ferry replica key";  // the trailing NUL is hashed too

// The associated data of extent `index` (replica_seal.h): byte offsets.
namespace aad {
constexpr size_t kEntryKey = 0;     // u64
constexpr size_t kEpoch = 8;        // u64
constexpr size_t kGeneration = 16;  // u64
constexpr size_t kOffset = 24;      // u64, the extent's virtual offset
constexpr size_t kIndex = 32;       // u32
constexpr size_t kBytes = 36;       // u32
static_assert(kBytes + 4 == 40);    // ReplicaSealer::ExtentAad
}  // namespace aad

cache::GcmKey::Nonce ExtentNonce(uint32_t index) {
  cache::GcmKey::Nonce n{};
  StoreLE<uint64_t>(n.data(), index);
  return n;
}

// No extent index reaches it (indices are u32).
cache::GcmKey::Nonce ManifestNonce() {
  cache::GcmKey::Nonce n{};
  n.fill(0xff);
  return n;
}

}  // namespace

ReplicaSalt RandomReplicaSalt() {
  ReplicaSalt s{};
  if (RAND_bytes(s.data(), static_cast<int>(s.size())) != 1) {
    std::abort();  // no randomness: a reused salt could reuse a nonce
  }
  return s;
}

std::unique_ptr<const ReplicaSealer> ReplicaSealer::Make(const cache::PageSealer& entry,
                                                         const ReplicaSalt& salt,
                                                         uint64_t generation) {
  std::array<uint8_t, kReplicaSaltBytes + 8> context{};
  std::copy(salt.begin(), salt.end(), context.begin());
  StoreLE<uint64_t>(context.data() + kReplicaSaltBytes, generation);
  cache::KeyBytes key = entry.DeriveKey({kKeyLabel, sizeof kKeyLabel}, context);
  std::unique_ptr<const ReplicaSealer> s(
      new ReplicaSealer(key, entry.entry_key(), entry.epoch(), generation));
  cache::WipeKey(key);
  return s;
}

ReplicaSealer::ExtentAad ReplicaSealer::MakeExtentAad(uint32_t index,
                                                      uint64_t offset,
                                                      size_t bytes) const {
  ExtentAad a{};
  StoreLE<uint64_t>(a.data() + aad::kEntryKey, entry_key_);
  StoreLE<uint64_t>(a.data() + aad::kEpoch, epoch_);
  StoreLE<uint64_t>(a.data() + aad::kGeneration, generation_);
  StoreLE<uint64_t>(a.data() + aad::kOffset, offset);
  StoreLE<uint32_t>(a.data() + aad::kIndex, index);
  StoreLE<uint32_t>(a.data() + aad::kBytes, static_cast<uint32_t>(bytes));
  return a;
}

SealTag ReplicaSealer::SealExtent(uint32_t index,
                                  uint64_t offset,
                                  std::span<const uint8_t> in,
                                  uint8_t* out) const {
  const ExtentAad a = MakeExtentAad(index, offset, in.size());
  return key_.Seal(ExtentNonce(index), a, in, out);
}

bool ReplicaSealer::OpenExtent(uint32_t index,
                               uint64_t offset,
                               std::span<uint8_t> bytes,
                               const SealTag& tag) const {
  const ExtentAad a = MakeExtentAad(index, offset, bytes.size());
  return key_.Open(ExtentNonce(index), a, bytes, tag);
}

bool ReplicaSealer::OpenExtent(uint32_t index,
                               uint64_t offset,
                               std::span<const std::span<uint8_t>> pieces,
                               const SealTag& tag) const {
  size_t bytes = 0;
  for (std::span<uint8_t> p : pieces) {
    bytes += p.size();
  }
  const ExtentAad a = MakeExtentAad(index, offset, bytes);
  return key_.Open(ExtentNonce(index), a, pieces, tag);
}

namespace {

std::vector<uint8_t> ManifestAad(uint64_t entry_key, std::span<const uint8_t> clear) {
  std::vector<uint8_t> a(8 + clear.size());
  StoreLE<uint64_t>(a.data(), entry_key);
  std::copy(clear.begin(), clear.end(), a.begin() + 8);
  return a;
}

}  // namespace

SealTag ReplicaSealer::SealManifest(std::span<const uint8_t> clear,
                                    std::span<uint8_t> sections) const {
  return key_.Seal(ManifestNonce(), ManifestAad(entry_key_, clear), sections, sections.data());
}

bool ReplicaSealer::OpenManifest(std::span<const uint8_t> clear,
                                 std::span<uint8_t> sections,
                                 const SealTag& tag) const {
  return key_.Open(ManifestNonce(), ManifestAad(entry_key_, clear), sections, tag);
}

}  // namespace ferry::replica
