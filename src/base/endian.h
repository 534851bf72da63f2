// Explicit-endian loads and stores for on-disk formats. ROOT is big-endian; ferry's own
// formats are little-endian. All functions accept unaligned pointers.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace ferry {

template <class T>
inline T LoadBE(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if constexpr (std::endian::native == std::endian::little && sizeof(T) > 1) {
    if constexpr (sizeof(T) == 2) {
      v = std::bit_cast<T>(__builtin_bswap16(std::bit_cast<uint16_t>(v)));
    } else if constexpr (sizeof(T) == 4) {
      v = std::bit_cast<T>(__builtin_bswap32(std::bit_cast<uint32_t>(v)));
    } else if constexpr (sizeof(T) == 8) {
      v = std::bit_cast<T>(__builtin_bswap64(std::bit_cast<uint64_t>(v)));
    }
  }
  return v;
}

template <class T>
inline void StoreBE(void* p, T v) {
  if constexpr (std::endian::native == std::endian::little && sizeof(T) > 1) {
    if constexpr (sizeof(T) == 2) {
      v = std::bit_cast<T>(__builtin_bswap16(std::bit_cast<uint16_t>(v)));
    } else if constexpr (sizeof(T) == 4) {
      v = std::bit_cast<T>(__builtin_bswap32(std::bit_cast<uint32_t>(v)));
    } else if constexpr (sizeof(T) == 8) {
      v = std::bit_cast<T>(__builtin_bswap64(std::bit_cast<uint64_t>(v)));
    }
  }
  std::memcpy(p, &v, sizeof(T));
}

template <class T>
inline T LoadLE(const void* p) {
  static_assert(std::endian::native == std::endian::little, "big-endian hosts unsupported");
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
inline void StoreLE(void* p, T v) {
  static_assert(std::endian::native == std::endian::little, "big-endian hosts unsupported");
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace ferry
