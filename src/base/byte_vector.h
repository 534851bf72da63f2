// ByteVector: a growable byte buffer for data that is overwritten right after it is sized
// (decompression targets, read buffers, decoded columns).
//
// The subset of std::vector<uint8_t> that the code base uses (add members as callers need
// them), with two differences that matter on the reader's hot path:
//   - resize() and the size constructor leave new bytes uninitialised (no memset pass);
//   - growth moves the old bytes with realloc() (one memcpy, or an mremap of large blocks),
//     where std::vector with a custom allocator relocates byte by byte.
// Capacity grows geometrically, so appends are amortised O(1). Storage comes from malloc: 16-byte
// aligned, enough for any value type a Column holds.
// Thread-safety: none (a plain value type). Allocation failure throws std::bad_alloc, as
// std::vector does; nothing in the project catches it, so it ends the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace ferry {

// An allocator whose value-less construct() default-initialises: std::vector<T, it>::resize()
// leaves trivial elements uninitialised (for buffers of wider types that are overwritten at once).
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {  // NOLINT(readability-identifier-naming): the name the allocator requirements use
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}  // NOLINT: allocator rebind
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

class ByteVector {
 public:
  using value_type = uint8_t;
  using size_type = size_t;
  using iterator = uint8_t*;
  using const_iterator = const uint8_t*;

  ByteVector() = default;
  // n uninitialised bytes.
  explicit ByteVector(size_t n) { resize(n); }
  ByteVector(const ByteVector& other) { assign(other.begin(), other.end()); }
  ByteVector(ByteVector&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  ByteVector& operator=(const ByteVector& other) {
    if (this != &other) {
      assign(other.begin(), other.end());
    }
    return *this;
  }
  ByteVector& operator=(ByteVector&& other) noexcept {
    if (this != &other) {
      // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): this class is the RAII owner
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): as in operator=
  ~ByteVector() { std::free(data_); }

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }

  uint8_t* begin() { return data_; }
  uint8_t* end() { return data_ + size_; }
  const uint8_t* begin() const { return data_; }
  const uint8_t* end() const { return data_ + size_; }
  uint8_t& operator[](size_t i) { return data_[i]; }
  const uint8_t& operator[](size_t i) const { return data_[i]; }

  // Capacity of at least n bytes; keeps the contents.
  void reserve(size_t n) {
    if (n > capacity_) {
      Reallocate(n);
    }
  }
  // New bytes (when growing) are uninitialised.
  void resize(size_t n) {
    if (n > capacity_) {
      Grow(n);
    }
    size_ = n;
  }
  void clear() { size_ = 0; }
  void push_back(uint8_t v) {
    if (size_ == capacity_) {
      Grow(size_ + 1);
    }
    data_[size_++] = v;
  }
  template <class It>
  void assign(It first, It last) {
    clear();
    insert(end(), first, last);
  }
  // Inserts [first, last) (which must not point into this buffer) before pos.
  template <class It>
  uint8_t* insert(const uint8_t* pos, It first, It last) {
    const auto at = static_cast<size_t>(pos - data_);
    const auto n = static_cast<size_t>(last - first);
    if (n == 0) {
      return data_ + at;
    }
    resize(size_ + n);
    uint8_t* dst = data_ + at;
    if (at + n < size_) {
      std::memmove(dst + n, dst, size_ - n - at);
    }
    if constexpr (std::is_pointer_v<It> && sizeof(*first) == 1) {
      std::memcpy(dst, first, n);
    } else {
      for (size_t k = 0; k < n; ++k, ++first) {
        dst[k] = static_cast<uint8_t>(*first);
      }
    }
    return dst;
  }

  friend bool operator==(const ByteVector& a, const ByteVector& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_) == 0);
  }

 private:
  void Grow(size_t need) { Reallocate(need > 2 * capacity_ ? need : 2 * capacity_); }
  void Reallocate(size_t n) {
    // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): realloc can grow in place, new[] cannot
    void* p = std::realloc(data_, n == 0 ? 1 : n);
    if (p == nullptr) {
      throw std::bad_alloc();
    }
    data_ = static_cast<uint8_t*>(p);
    capacity_ = n;
  }

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ferry
