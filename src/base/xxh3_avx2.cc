// XXH3-64 with xxHash's AVX2 kernels, compiled inline from the libxxhash header (the shared
// library is built for baseline x86-64, SSE2 only, and runs 2.5x slower on 4 MiB blocks).
// The whole file is compiled with -mavx2 (base/CMakeLists.txt): it includes nothing but the C
// header, whose functions are all static here, so no AVX2 code can leak into another
// translation unit through a shared inline function. Called only when the CPU has AVX2
// (hash.cc). Same output as XXH3_64bits: the vector width does not change the algorithm.
#define XXH_INLINE_ALL
#if defined(__x86_64__)
#define XXH_VECTOR XXH_AVX2
#endif
#include "base/xxh3_avx2.h"

#include <xxhash.h>

namespace ferry::hash::internal {

uint64_t Xxh3Avx2(const void* data, size_t size) {
  return XXH3_64bits(data, size);
}

void Xxh3Avx2Update(void* state, const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

uint64_t Xxh3Avx2Digest(const void* state) {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state));
}

}  // namespace ferry::hash::internal
