#include "base/byte_swap.h"

#include <cstring>

namespace ferry {
namespace {

// Kept free of aliasing so the compiler vectorises it (see CMakeLists.txt: -O3).
template <class U>
void SwapLoop(uint8_t* __restrict out, const uint8_t* __restrict src, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    U v;
    std::memcpy(&v, src + i * sizeof(U), sizeof(U));
    if constexpr (sizeof(U) == 2) {
      v = __builtin_bswap16(v);
    } else if constexpr (sizeof(U) == 4) {
      v = __builtin_bswap32(v);
    } else {
      v = __builtin_bswap64(v);
    }
    std::memcpy(out + i * sizeof(U), &v, sizeof(U));
  }
}

}  // namespace

void SwapCopy(uint8_t* out, const uint8_t* src, size_t count, size_t value_size) {
  if (count == 0) {
    return;
  }
  switch (value_size) {
    case 1:
      std::memcpy(out, src, count);
      break;
    case 2:
      SwapLoop<uint16_t>(out, src, count);
      break;
    case 4:
      SwapLoop<uint32_t>(out, src, count);
      break;
    case 8:
      SwapLoop<uint64_t>(out, src, count);
      break;
    default:
      break;
  }
}

}  // namespace ferry
