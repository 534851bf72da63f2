// ROOT compression framing and codecs.
//
// A compressed ROOT payload is a chain of blocks, each with a 9-byte header:
//
//   bytes 0-1  algorithm tag: "ZL" zlib, "XZ" LZMA, "L4" LZ4, "ZS" zstd, "CS" old ROOT deflate
//   byte  2    method (8 for ZL/CS, 0 for XZ, library major version 1 for L4/ZS)
//   bytes 3-5  compressed size of the block, excluding the header (little-endian, 24 bits)
//   bytes 6-8  uncompressed size of the block (little-endian, 24 bits)
//
// Blocks hold at most 0xFFFFFF uncompressed bytes. An L4 block starts with the XXH64 (seed 0,
// big-endian) of the LZ4 data that follows, and its compressed size includes those 8 bytes.
// The sum of uncompressed sizes is the record's fObjlen. See docs/ARCHITECTURE.md and
// docs/format/root.md.
//
// Thread-safety: all functions are thread-safe; decoder/encoder contexts are per thread and
// reused, so steady-state decompression does not allocate (LZMA excepted: liblzma allocates
// its decoder state per block).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/byte_vector.h"
#include "base/result.h"

namespace ferry::codec {

// Numbering follows ROOT's fCompress algorithm digit.
enum class Algorithm : uint8_t {
  kNone = 0,  // stored uncompressed
  kZlib = 1,
  kLzma = 2,
  kOldRoot = 3,  // "CS": raw deflate without the zlib wrapper (ROOT's pre-zlib format)
  kLz4 = 4,
  kZstd = 5,
};

std::string_view AlgorithmName(Algorithm a);  // "none", "zlib", "lzma", "cs", "lz4", "zstd"

constexpr size_t kBlockHeaderSize = 9;
constexpr size_t kMaxBlockSize = 0xFFFFFF;

// A compression choice: algorithm and level (zlib/lzma 1-9, zstd 1-19, lz4 1-12).
struct Setting {
  Algorithm algorithm = Algorithm::kZlib;
  int level = 1;

  // Parses "zlib:1", "lzma:9", "zstd:5", "lz4", "none"; level defaults per algorithm.
  static Result<Setting> Parse(std::string_view text);
  // ROOT's fCompress value: 100 * algorithm + level (0 level for none => 0).
  int RootSetting() const;
  std::string ToString() const;
};

struct BlockHeader {
  Algorithm algorithm;
  uint8_t method;
  uint32_t compressed_size;  // excluding the 9-byte header
  uint32_t uncompressed_size;
};

// Parses one block header. Corruption for an unknown tag or fewer than 9 bytes.
Result<BlockHeader> ParseBlockHeader(std::span<const uint8_t> bytes);

// Algorithm of the first block; kNone when the payload is not a framed block chain.
Algorithm DetectAlgorithm(std::span<const uint8_t> payload);

// Decompresses a whole ROOT payload (chain of blocks) into out, whose size must be the
// expected uncompressed size (fObjlen). Corruption when a block is truncated, a checksum or
// size does not match, or the blocks do not fill out exactly.
Status DecompressPayload(std::span<const uint8_t> in, std::span<uint8_t> out);

// Compresses in as a ROOT block chain appended to out. Returns false (and leaves out as it
// was) when the result would not be smaller than the input; ROOT then stores the payload raw.
Result<bool> CompressPayload(const Setting& setting, std::span<const uint8_t> in, ByteVector* out);

// Version number of the library behind an algorithm (ZSTD_versionNumber(), LZ4_versionNumber();
// 0 for none and the others). Same input, setting and version give the same compressed bytes.
uint32_t LibraryVersion(Algorithm algorithm);

// Bare codec calls on one block body (no ROOT header), used by benchmarks and tests.
// DecompressBlock requires out.size() to be the exact uncompressed size.
Status DecompressBlock(Algorithm algorithm, std::span<const uint8_t> in, std::span<uint8_t> out);
// Appends the compressed block body to out and returns its size.
Result<size_t> CompressBlock(const Setting& setting, std::span<const uint8_t> in, ByteVector* out);

}  // namespace ferry::codec
