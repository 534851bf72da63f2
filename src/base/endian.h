// Explicit-endian loads and stores for on-disk formats. ROOT is big-endian; ferry's own
// formats are little-endian. All functions accept unaligned pointers.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace ferry {

// T with its bytes in reverse order (std::byteswap, C++23); a T of another size than 2, 4 or 8
// bytes is returned as is. Separate ifs, not an else-if chain: clang-tidy 14 sees the
// discarded branches of an instantiated if-constexpr chain as identical (bugprone-branch-clone).
template <class T>
inline T ReverseBytes(T v) {
  if constexpr (sizeof(T) == 2) {
    return std::bit_cast<T>(__builtin_bswap16(std::bit_cast<uint16_t>(v)));
  }
  if constexpr (sizeof(T) == 4) {
    return std::bit_cast<T>(__builtin_bswap32(std::bit_cast<uint32_t>(v)));
  }
  if constexpr (sizeof(T) == 8) {
    return std::bit_cast<T>(__builtin_bswap64(std::bit_cast<uint64_t>(v)));
  }
  return v;
}

template <class T>
inline T LoadBE(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if constexpr (std::endian::native == std::endian::little) {
    v = ReverseBytes(v);
  }
  return v;
}

template <class T>
inline void StoreBE(void* p, T v) {
  if constexpr (std::endian::native == std::endian::little) {
    v = ReverseBytes(v);
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
