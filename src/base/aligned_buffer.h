// AlignedBuffer: a fixed-size heap buffer aligned for O_DIRECT (4096 bytes by default).
// Move-only. Contents are uninitialised after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace ferry {

class AlignedBuffer {
 public:
  static constexpr size_t kDefaultAlignment = 4096;

  AlignedBuffer() = default;
  // Allocates size bytes (rounded up to the alignment). Aborts on out-of-memory, like new.
  explicit AlignedBuffer(size_t size, size_t alignment = kDefaultAlignment);
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  ~AlignedBuffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_, size_}; }
  std::span<const uint8_t> span() const { return {data_, size_}; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ferry
