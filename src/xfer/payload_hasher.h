// PayloadHasher: the payload hash (protocol.h PayloadHash, XXH3-64) of a payload that arrives
// in pieces, so that each piece is hashed while it is still in the cache it was received into.
// Digest() equals PayloadHash() of the concatenated pieces, with the same AVX2 kernels where
// the CPU has them. Holds its state inline: Reset() and Update() never allocate. Not
// thread-safe (one per stream thread; the receiver's use Conn::RecvExactHashed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::xfer {

class PayloadHasher {
 public:
  PayloadHasher() { Reset(); }
  void Reset();
  void Update(const uint8_t* data, size_t size);
  uint64_t Digest() const;

 private:
  alignas(64) unsigned char state_[640] = {};  // an XXH3_state_t (size checked in the .cc)
};

}  // namespace ferry::xfer
