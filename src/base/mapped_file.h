// RAII read-only memory mapping of a whole file. Move-only; unmaps on destruction.
// The span returned by data() is valid while the MappedFile lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "base/result.h"

namespace ferry {

class MappedFile {
 public:
  enum class Advice { kNormal, kRandom, kSequential };

  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept
      : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();

  // Maps the file read-only. An empty file gives an empty mapping (no mmap call).
  static Result<MappedFile> Map(const std::string& path, Advice advice = Advice::kNormal);
  static Result<MappedFile> MapFd(int fd, uint64_t size, Advice advice = Advice::kNormal);

  std::span<const uint8_t> data() const { return {static_cast<const uint8_t*>(addr_), size_}; }
  size_t size() const { return size_; }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ferry
