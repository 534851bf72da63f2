// Per-algorithm block codecs behind compression.h. Each decoder must fill out exactly or fail;
// each encoder appends to out and returns the number of bytes appended.
#pragma once

#include <span>

#include "base/byte_vector.h"
#include "base/result.h"

namespace ferry::codec::internal {

Status InflateZlib(std::span<const uint8_t> in, std::span<uint8_t> out);
Status InflateRaw(std::span<const uint8_t> in, std::span<uint8_t> out);
Result<size_t> DeflateZlib(int level, std::span<const uint8_t> in, ByteVector* out);
Result<size_t> DeflateRaw(int level, std::span<const uint8_t> in, ByteVector* out);

Status DecodeLzma(std::span<const uint8_t> in, std::span<uint8_t> out);
Result<size_t> EncodeLzma(int level, std::span<const uint8_t> in, ByteVector* out);

uint32_t ZstdVersion();
uint32_t Lz4Version();

Status DecodeZstd(std::span<const uint8_t> in, std::span<uint8_t> out);
Result<size_t> EncodeZstd(int level, std::span<const uint8_t> in, ByteVector* out);

// LZ4 with ROOT's 8-byte XXH64 checksum prefix.
Status DecodeLz4Root(std::span<const uint8_t> in, std::span<uint8_t> out);
Result<size_t> EncodeLz4Root(int level, std::span<const uint8_t> in, ByteVector* out);

}  // namespace ferry::codec::internal
