#include "base/hash.h"

#include <new>

#include <xxhash.h>

namespace ferry::hash {

uint64_t Xxh64(const void* data, size_t size, uint64_t seed) {
  return XXH64(data, size, seed);
}

uint64_t Xxh3(const void* data, size_t size) {
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
