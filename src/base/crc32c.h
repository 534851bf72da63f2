// CRC32C (Castagnoli), as used for page checksums and transfer blocks.
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at start-up),
// otherwise a slicing-by-8 table. Thread-safe; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ferry::crc32c {

// Extends a running CRC (start with 0) over data.
uint32_t Extend(uint32_t crc, const void* data, size_t size);

inline uint32_t Value(const void* data, size_t size) {
  return Extend(0, data, size);
}
inline uint32_t Value(std::span<const uint8_t> data) {
  return Extend(0, data.data(), data.size());
}

// True when the hardware path is in use.
bool HardwareAccelerated();

}  // namespace ferry::crc32c
