// Encryption at rest of the page store: the master key, the per-entry data keys it wraps, and
// the sealing of pages and fragments with AES-256-GCM (libcrypto). Format and reasons:
// docs/format/page-store.md, "Encryption at rest".
//
//   master key file   32 bytes, mode 0600, owned by the process's user
//   key id            first 8 bytes (LE) of SHA-256("ferry cache master key id\0" || key)
//   wrapped data key  AES-256 key wrap (RFC 3394) of the 32-byte data key: 40 bytes
//   seal (24 bytes)   GCM tag (16) | u64 nonce id; nonce = nonce id | u32 low bits of the page
//   associated data   u64 entry key | u64 epoch | u64 page | u32 lo | u32 hi (32 bytes)
//
// Thread-safety: MasterKey and PageSealer are immutable after construction and may be used from
// any number of threads; each thread keeps its own cipher contexts (thread_local): up to 8 GCM
// contexts, each keyed for one sealer (least recently used replaced), and one HMAC context, so
// that a thread serving pages of several entries in turn does not key a context per page, and
// sealing and opening allocate nothing in steady state.
// Key material is wiped (OPENSSL_cleanse) when its holder is destroyed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

namespace ferry::cache {

inline constexpr size_t kKeyBytes = 32;
inline constexpr size_t kWrappedKeyBytes = 40;
inline constexpr size_t kTagBytes = 16;
// On disk: tag, then the u64 nonce id.
inline constexpr size_t kSealBytes = 24;

using KeyBytes = std::array<uint8_t, kKeyBytes>;
using WrappedKey = std::array<uint8_t, kWrappedKeyBytes>;

// What authenticates one sealed page or fragment (it takes the place of the CRC32C).
struct Seal {
  std::array<uint8_t, kTagBytes> tag{};
  uint64_t nonce = 0;
  bool operator==(const Seal&) const = default;
};

class MasterKey {
 public:
  // Reads a key file: exactly 32 bytes, a regular file of this process's user without group or
  // other permission bits; or, for "keyring:NAME", the kernel keyring's key NAME (key_ring.h).
  // kInvalidArgument saying what is wrong (and how to fix it) otherwise.
  static Result<MasterKey> Load(const std::string& path);
  static MasterKey FromBytes(const KeyBytes& bytes);

  MasterKey(const MasterKey& other) = default;
  MasterKey& operator=(const MasterKey& other) = default;
  MasterKey(MasterKey&&) noexcept = default;
  MasterKey& operator=(MasterKey&&) noexcept = default;
  ~MasterKey();

  uint64_t id() const { return id_; }
  WrappedKey Wrap(const KeyBytes& data_key) const;
  // kCorruption when `wrapped` was not wrapped by this key (or was damaged).
  Result<KeyBytes> Unwrap(const WrappedKey& wrapped) const;

 private:
  MasterKey() = default;
  KeyBytes key_{};
  uint64_t id_ = 0;
};

// A new random data key (RAND_bytes).
KeyBytes RandomDataKey();
// Overwrites key material that is no longer needed (OPENSSL_cleanse: not optimised away).
void WipeKey(KeyBytes& key);
// The key id of `key`, as 16 hex digits (messages).
std::string KeyIdHex(uint64_t id);

// Seals and opens the pages and fragments of one entry incarnation.
class PageSealer {
 public:
  // entry_key: the XXH3-64 of the URL asked for (the entry's KEY); epoch: the index's.
  PageSealer(const KeyBytes& data_key, uint64_t entry_key, uint64_t epoch);
  PageSealer(const PageSealer&) = delete;
  PageSealer& operator=(const PageSealer&) = delete;
  PageSealer(PageSealer&&) = delete;
  PageSealer& operator=(PageSealer&&) = delete;
  ~PageSealer();

  // Encrypts bytes [lo, lo + in.size()) of page `page` into `out` (in.size() bytes; may be
  // in.data()). in.size() must be at most 1 MiB.
  Seal SealBytes(uint64_t page, uint32_t lo, std::span<const uint8_t> in, uint8_t* out) const;
  // Decrypts `bytes` (bytes [lo, lo + size) of page `page`) in place and checks the tag. False
  // when it does not authenticate; the bytes are then zeroed, never left half-decrypted.
  bool OpenBytes(uint64_t page, uint32_t lo, std::span<uint8_t> bytes, const Seal& seal) const;

  uint64_t entry_key() const { return entry_key_; }
  uint64_t epoch() const { return epoch_; }
  // A key for another use of this entry's data key (the replica tier's, per generation):
  // HMAC-SHA256(data key, label || context). The data key itself never leaves the sealer.
  KeyBytes DeriveKey(std::string_view label, std::span<const uint8_t> context) const;

 private:
  KeyBytes key_;
  KeyBytes nonce_key_;
  uint64_t entry_key_;
  uint64_t epoch_;
  uint64_t id_;  // unique in the process: which thread contexts are keyed for this sealer
};

// AES-256-GCM under one key, with 12-byte nonces the caller chooses and keeps unique (the
// replica tier's extents and manifests, replica/replica_seal.h). It shares PageSealer's
// per-thread contexts, so a reader switching between keys does not key a context per call.
// Immutable; any number of threads. The key is wiped when the object is destroyed.
class GcmKey {
 public:
  static constexpr size_t kNonceBytes = 12;
  using Nonce = std::array<uint8_t, kNonceBytes>;
  using Tag = std::array<uint8_t, kTagBytes>;

  explicit GcmKey(const KeyBytes& key);
  GcmKey(const GcmKey&) = delete;
  GcmKey& operator=(const GcmKey&) = delete;
  GcmKey(GcmKey&&) = delete;
  GcmKey& operator=(GcmKey&&) = delete;
  ~GcmKey();

  // Encrypts `in` into `out` (in.size() bytes; may be in.data()) and returns the tag over
  // `aad` and the ciphertext.
  Tag Seal(const Nonce& nonce,
           std::span<const uint8_t> aad,
           std::span<const uint8_t> in,
           uint8_t* out) const;
  // Decrypts `bytes` in place and checks `tag`; false when it does not authenticate, the
  // bytes then zeroed.
  bool Open(const Nonce& nonce,
            std::span<const uint8_t> aad,
            std::span<uint8_t> bytes,
            const Tag& tag) const;
  // The same for ciphertext that lies in several buffers, `pieces` in order (a sealed replica
  // extent read straight into a caller's buffers): false, every piece zeroed, when it does not
  // authenticate.
  bool Open(const Nonce& nonce,
            std::span<const uint8_t> aad,
            std::span<const std::span<uint8_t>> pieces,
            const Tag& tag) const;

 private:
  KeyBytes key_;
  uint64_t id_;  // which thread contexts are keyed for it (shared with PageSealer's ids)
};

}  // namespace ferry::cache
