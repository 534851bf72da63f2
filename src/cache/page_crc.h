// PageCrc: CRC32C (the same values as ferry::crc32c::Value) tuned for the cache's read path,
// where every hit verifies every page it returns.
//
// With SSE4.2 the buffer is cut into three interleaved streams, so three crc32 instructions
// are in flight at once instead of one (the instruction's latency is three cycles); the
// three partial CRCs are joined with precomputed shift tables (CRC is linear: appending L zero
// bytes to a state is a fixed 32x32 bit matrix, tabulated per byte of the state). Without
// SSE4.2 it is crc32c::Value. Thread-safe; no allocation (tables are built once, on first use).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::cache {

uint32_t PageCrc(const void* data, size_t size);

}  // namespace ferry::cache
