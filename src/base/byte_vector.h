// ByteVector: std::vector<uint8_t> whose resize() leaves new bytes uninitialised, for buffers
// that are immediately overwritten (decompression targets, read buffers). Saves a memset pass
// over every decoded basket.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace ferry {

template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}  // NOLINT: allocator rebind
  // Value-less construct() default-initialises: no zeroing for trivial types.
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using ByteVector = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

}  // namespace ferry
