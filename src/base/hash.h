// xxHash wrappers (libxxhash): XXH64 as ROOT's LZ4 framing uses it, XXH3-64 for ferry's own
// formats. Thread-safe; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ferry::hash {

uint64_t Xxh64(const void* data, size_t size, uint64_t seed = 0);
uint64_t Xxh3(const void* data, size_t size);
inline uint64_t Xxh3(std::span<const uint8_t> data) {
  return Xxh3(data.data(), data.size());
}

// Incremental XXH3-64 over a stream of pieces (e.g. a whole-file digest).
class Xxh3Stream {
 public:
  Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;
  ~Xxh3Stream();
  void Update(const void* data, size_t size);
  uint64_t Digest() const;

 private:
  void* state_;
};

}  // namespace ferry::hash
