#include "base/aligned_buffer.h"

#include <cstdlib>
#include <new>

namespace ferry {

AlignedBuffer::AlignedBuffer(size_t size, size_t alignment) {
  size_t rounded = (size + alignment - 1) / alignment * alignment;
  if (rounded == 0) {
    rounded = alignment;
  }
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): this class is the RAII owner
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  data_ = static_cast<uint8_t*>(p);
  size_ = size;
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);  // NOLINT(cppcoreguidelines-owning-memory): owned here
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

AlignedBuffer::~AlignedBuffer() {
  std::free(data_);  // NOLINT(cppcoreguidelines-owning-memory): owned here
}

}  // namespace ferry
