#include "xfer/payload_hasher.h"

// The state lives inside the object (no XXH3_createState allocation), which needs the
// structure's definition: xxhash's inline mode exposes it and keeps these functions local.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <new>

namespace ferry::xfer {
namespace {

static_assert(sizeof(XXH3_state_t) <= 640 && alignof(XXH3_state_t) <= 64);

XXH3_state_t* State(unsigned char* p) {
  return std::launder(reinterpret_cast<XXH3_state_t*>(p));
}

}  // namespace

void PayloadHasher::Reset() {
  XXH3_64bits_reset(State(state_));
}

void PayloadHasher::Update(const uint8_t* data, size_t size) {
  XXH3_64bits_update(State(state_), data, size);
}

uint64_t PayloadHasher::Digest() const {
  return XXH3_64bits_digest(State(const_cast<unsigned char*>(state_)));
}

}  // namespace ferry::xfer
