// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the transfer handshake.
//
// ferry needs only a keyed MAC for challenge-response authentication, so it carries its own
// small SHA-256 instead of depending on a crypto library. Not constant-time with respect to the
// message length (lengths are public here); MacEqual compares digests in constant time.
// Thread-safety: Sha256 objects are values; the free functions are thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/result.h"

namespace ferry::xfer {

using Digest256 = std::array<uint8_t, 32>;

class Sha256 {
 public:
  static constexpr size_t kBlockSize = 64;

  Sha256();
  void Update(const void* data, size_t size);
  void Update(std::span<const uint8_t> data) { Update(data.data(), data.size()); }
  // Finishes the hash. The object must not be updated afterwards.
  Digest256 Final();

 private:
  void Compress(const uint8_t* block);

  uint32_t state_[8];
  uint8_t buffer_[kBlockSize];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

Digest256 Sha256Of(std::span<const uint8_t> data);

// HMAC-SHA256 of the concatenation of `parts` under `key` (any key length).
Digest256 HmacSha256(std::span<const uint8_t> key, std::span<const std::span<const uint8_t>> parts);

// Constant-time equality of two digests.
bool MacEqual(const Digest256& a, const Digest256& b);

// Fills `out` from the kernel's random source (getrandom).
Status RandomBytes(std::span<uint8_t> out);

}  // namespace ferry::xfer
