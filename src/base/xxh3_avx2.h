// Internal to base/hash.cc and xfer/payload_hasher.cc: XXH3-64 with AVX2 kernels. Call only
// when the CPU has AVX2.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::hash::internal {

uint64_t Xxh3Avx2(const void* data, size_t size);
// Streaming XXH3-64 on an XXH3_state_t (`state`, reset by XXH3_64bits_reset in any translation
// unit: the state's layout does not depend on the vector width).
void Xxh3Avx2Update(void* state, const void* data, size_t size);
uint64_t Xxh3Avx2Digest(const void* state);

}  // namespace ferry::hash::internal
