// CompressRecordPayload: compresses a record payload into ROOT's block chain (9-byte headers,
// at most 16 MiB per block), or reports that it should be stored raw.
//
// Delegates to codec::CompressPayload, except for LZMA: there each block is written with
// liblzma's streaming encoder (CRC32 check, no sizes in the xz block header), the exact xz
// layout ROOT produces, with the preset's dictionary capped at the block size. Some readers depend
// on it: jsroot skips a fixed 29 bytes (stream header, 12-byte block header, LZMA2 chunk header) to
// reach the LZMA properties byte, which fails on the longer block header of liblzma's single-call
// encoder.
//
// Thread-safe (per-thread encoder state).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "codec/compression.h"

namespace ferry::rootwrite {

// Appends the compressed chain to out and returns true, or leaves out unchanged and returns
// false when compression would not make the payload smaller (ROOT then stores it raw).
Result<bool> CompressRecordPayload(const codec::Setting& setting,
                                   std::span<const uint8_t> in,
                                   std::vector<uint8_t>* out);

// The body of one block exactly as CompressRecordPayload encodes it (no 9-byte header, no
// "not smaller" check): for benchmarks comparing the writer with its bare codec.
Result<size_t> CompressBlockBody(const codec::Setting& setting,
                                 std::span<const uint8_t> in,
                                 std::vector<uint8_t>* out);

}  // namespace ferry::rootwrite
