#include "xfer/sha256.h"

#include <errno.h>
#include <sys/random.h>

#include <cstring>
#include <vector>

#include "base/endian.h"

namespace ferry::xfer {
namespace {

// First 32 bits of the fractional parts of the cube roots of the first 64 primes (FIPS 180-4).
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t Rotr(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

}  // namespace

Sha256::Sha256()
    : state_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
             0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19},
      buffer_{} {}

void Sha256::Compress(const uint8_t* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = LoadBE<uint32_t>(block + 4 * i);
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 =
        h + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
    uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::Update(const void* data, size_t size) {
  const auto* in = static_cast<const uint8_t*>(data);
  total_bytes_ += size;
  if (buffered_ > 0) {
    size_t take = std::min(size, kBlockSize - buffered_);
    std::memcpy(buffer_ + buffered_, in, take);
    buffered_ += take;
    in += take;
    size -= take;
    if (buffered_ < kBlockSize) {
      return;
    }
    Compress(buffer_);
    buffered_ = 0;
  }
  while (size >= kBlockSize) {
    Compress(in);
    in += kBlockSize;
    size -= kBlockSize;
  }
  if (size > 0) {
    std::memcpy(buffer_, in, size);
    buffered_ = size;
  }
}

Digest256 Sha256::Final() {
  uint64_t bit_length = total_bytes_ * 8;
  uint8_t pad[kBlockSize * 2] = {0x80};
  size_t pad_len = (buffered_ < 56 ? 56 - buffered_ : 120 - buffered_);
  StoreBE<uint64_t>(pad + pad_len, bit_length);
  Update(pad, pad_len + 8);
  Digest256 out;
  for (int i = 0; i < 8; ++i) {
    StoreBE<uint32_t>(out.data() + 4 * i, state_[i]);
  }
  return out;
}

Digest256 Sha256Of(std::span<const uint8_t> data) {
  Sha256 h;
  h.Update(data);
  return h.Final();
}

Digest256 HmacSha256(std::span<const uint8_t> key,
                     std::span<const std::span<const uint8_t>> parts) {
  uint8_t block_key[Sha256::kBlockSize] = {};
  if (key.size() > Sha256::kBlockSize) {
    Digest256 k = Sha256Of(key);
    std::memcpy(block_key, k.data(), k.size());
  } else if (!key.empty()) {
    std::memcpy(block_key, key.data(), key.size());
  }
  uint8_t ipad[Sha256::kBlockSize];
  uint8_t opad[Sha256::kBlockSize];
  for (size_t i = 0; i < Sha256::kBlockSize; ++i) {
    ipad[i] = static_cast<uint8_t>(block_key[i] ^ 0x36);
    opad[i] = static_cast<uint8_t>(block_key[i] ^ 0x5c);
  }
  Sha256 inner;
  inner.Update(ipad, sizeof ipad);
  for (std::span<const uint8_t> p : parts) {
    inner.Update(p);
  }
  Digest256 inner_digest = inner.Final();
  Sha256 outer;
  outer.Update(opad, sizeof opad);
  outer.Update(inner_digest);
  return outer.Final();
}

bool MacEqual(const Digest256& a, const Digest256& b) {
  volatile uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = static_cast<uint8_t>(diff | (a[i] ^ b[i]));
  }
  return diff == 0;
}

Status RandomBytes(std::span<uint8_t> out) {
  size_t done = 0;
  for (int attempt = 0; done < out.size() && attempt < 64; ++attempt) {
    ssize_t n = ::getrandom(out.data() + done, out.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return IoError("getrandom failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  if (done < out.size()) {
    return IoError("getrandom returned too few bytes", 0);
  }
  return OkStatus();
}

}  // namespace ferry::xfer
