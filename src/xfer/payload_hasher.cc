#include "xfer/payload_hasher.h"

// The state lives inside the object (no XXH3_createState allocation), which needs the
// structure's definition: xxhash's inline mode exposes it and keeps these functions local.
#define XXH_INLINE_ALL
#include <new>

#include <xxhash.h>

#include "base/xxh3_avx2.h"

namespace ferry::xfer {
namespace {

static_assert(sizeof(XXH3_state_t) <= 640 && alignof(XXH3_state_t) <= 64);

XXH3_state_t* State(unsigned char* p) {
  return std::launder(reinterpret_cast<XXH3_state_t*>(p));
}

// This file is built for baseline x86-64 (SSE2); the AVX2 kernels (base/xxh3_avx2.cc) hash a
// block 2.5x faster, as PayloadHash does (base/hash.cc).
bool HaveAvx2() {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

}  // namespace

void PayloadHasher::Reset() {
  XXH3_64bits_reset(State(state_));
}

void PayloadHasher::Update(const uint8_t* data, size_t size) {
  if (HaveAvx2()) {
    hash::internal::Xxh3Avx2Update(State(state_), data, size);
    return;
  }
  XXH3_64bits_update(State(state_), data, size);
}

uint64_t PayloadHasher::Digest() const {
  auto* s = State(const_cast<unsigned char*>(state_));
  if (HaveAvx2()) {
    return hash::internal::Xxh3Avx2Digest(s);
  }
  return XXH3_64bits_digest(s);
}

}  // namespace ferry::xfer
