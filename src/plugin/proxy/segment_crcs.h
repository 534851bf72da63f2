// Checksums of a kXR_pgread answer: the CRC32C of each 4 KiB segment of the bytes a cached file
// returned, segments aligned to file offsets (the protocol's unit, whatever the cache's page
// size). A segment that is a whole page the cache holds full takes the CRC stored with the
// page (CachedFile::StoredPageCrcs: the hit was verified against it, so nothing is computed
// twice); partial pages and misses are computed from the bytes.
// Thread-safety: as CachedFile's reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "cache/cached_file.h"

namespace ferry::proxy {

// kXR_pgread's unit.
inline constexpr uint64_t kPgSize = 4096;

// Segments of [offset, offset + bytes): how many CRCs a pgread answer carries.
size_t SegmentCount(uint64_t offset, size_t bytes);

// After `file` read [offset, offset + data.size()) into `data`: each segment's CRC into `out`
// (at most out.size() segments). Returns how many came from the cache's stored CRCs.
size_t SegmentCrcs(const cache::CachedFile& file,
                   uint64_t offset,
                   std::span<const uint8_t> data,
                   std::span<uint32_t> out);

}  // namespace ferry::proxy
