// The access trace of a cache entry (`KEY.acc`): the application's reads of a pass that fills
// the byte tier (misses, and a handle's later first reads of bytes, hits included), one record per
// read call, so that the replica builder can lay baskets out in the order an analysis fetched them
// together. Byte layout: docs/format/replica.md ("Access trace").
//
// Encoding is append-only and self-delimiting: a record carries its own CRC, and decoding stops
// at the first record that does not validate (a torn tail after a crash), keeping the ones
// before it. Decoding never trusts a count its input's length does not back.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ferry::replica {

inline constexpr uint32_t kTraceMaxRanges = 4096;
// An entry's trace stops growing at this size (later reads are not recorded).
inline constexpr uint64_t kTraceMaxBytes = 16ull << 20;

struct TraceRange {
  uint64_t offset = 0;
  uint32_t length = 0;
};

struct TraceRecord {
  uint64_t generation = 0;  // replica generation the reader's layout had (0: original file)
  std::vector<TraceRange> ranges;
};

// Appends `ranges` (empty ones skipped) as one or more records (at most kTraceMaxRanges each).
void EncodeTraceRecord(uint64_t generation,
                       std::span<const TraceRange> ranges,
                       std::vector<uint8_t>& out);

// The records of a trace file's bytes, up to the first one that does not validate;
// `valid_bytes` (optional) gets the length they span.
std::vector<TraceRecord> DecodeTrace(std::span<const uint8_t> bytes, size_t* valid_bytes = nullptr);

}  // namespace ferry::replica
