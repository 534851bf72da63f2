// SHA-256 and HMAC-SHA256 for the transfer handshake, on OpenSSL's libcrypto.
//
// Authentication code belongs on a vetted library: libcrypto is already in the dependency
// closure (XRootD links it) and gets the security fixes of the distribution. A libcrypto failure
// (out of memory, a FIPS provider refusing the digest) is an error, never a digest: a MAC that
// silently came out as zeros on both ends would let anyone in.
// Thread-safety: the functions are thread-safe (libcrypto 3 initialises itself once).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/result.h"

namespace ferry::xfer {

using Digest256 = std::array<uint8_t, 32>;

Result<Digest256> Sha256Of(std::span<const uint8_t> data);

// HMAC-SHA256 (RFC 2104) of the concatenation of `parts` under `key` (any key length).
Result<Digest256> HmacSha256(std::span<const uint8_t> key,
                             std::span<const std::span<const uint8_t>> parts);

// Constant-time equality of two digests.
bool MacEqual(const Digest256& a, const Digest256& b);

// Fills `out` from the kernel's random source (getrandom).
Status RandomBytes(std::span<uint8_t> out);

}  // namespace ferry::xfer
