// Internal to base/hash.cc: XXH3-64 with AVX2 kernels. Call only when the CPU has AVX2.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::hash::internal {

uint64_t Xxh3Avx2(const void* data, size_t size);

}  // namespace ferry::hash::internal
