#include "base/hash.h"

#include <new>

#include <xxhash.h>

#include "base/xxh3_avx2.h"

namespace ferry::hash {

uint64_t Xxh64(const void* data, size_t size, uint64_t seed) {
  return XXH64(data, size, seed);
}

uint64_t Xxh3(const void* data, size_t size) {
  // Inputs up to 240 bytes take scalar paths in both; the long-input kernels are 2.5x faster
  // with AVX2 (block checksums of the transfer, page digests).
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && size > 240) {
    return internal::Xxh3Avx2(data, size);
  }
#endif
  return XXH3_64bits(data, size);
}

Xxh3Stream::Xxh3Stream() : state_(XXH3_createState()) {
  if (state_ == nullptr) {
    throw std::bad_alloc();
  }
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

Xxh3Stream::~Xxh3Stream() {
  XXH3_freeState(static_cast<XXH3_state_t*>(state_));
}

void Xxh3Stream::Update(const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}

uint64_t Xxh3Stream::Digest() const {
  return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_));
}

}  // namespace ferry::hash
