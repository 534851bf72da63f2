// Column copies (docs/format/store.md section 12): one jagged column of one shard stored
// column-major in its own file beside the shard, made on demand by a scan (or `ferry store
// copies --add`) so that later scans of the column read only its bytes.
//
// A copy holds the same chunks as the J chunks of `convert --scan-copy` (section 5): per S
// block, the column's values of the block's events, byte-shuffled, compressed on their own
// with the store's codec (raw when that does not shrink them). Layout:
//
//   [0, 64)        header (CopyHeader)
//   chunks         in S-block order
//   directory      per S block {u64 offset, u32 stored size, u32 CRC32C of the stored bytes}
//                  (the last 16 * s_blocks bytes of the file)
//
// Header (little-endian; the rest of the 64 bytes is zero):
//   0  8  magic "FERRYEVC"          40  8  events of the shard
//   8  4  copy format version (1)   48  4  S blocks
//  12  4  header size (64)          52  1  log2 Ks
//  16  8  run                       53  3  zero
//  24  4  shard generation          56  4  CRC32C of the directory
//  28  4  column (schema index)     60  4  CRC32C of bytes [0, 60)
//  32  8  schema hash
//
// Parse* check every field a reader relies on and return kCorruption naming the structure;
// they never read outside the span given. A copy is written whole, fsynced, and only then
// named by a manifest, so a reader never sees one half-written.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/fd.h"
#include "base/result.h"
#include "codec/compression.h"
#include "store/format.h"

namespace ferry::store {

constexpr char kCopyMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'E', 'V', 'C'};
constexpr uint32_t kCopyVersion = 1;
constexpr uint32_t kCopyHeaderSize = 64;

struct CopyHeader {
  uint64_t run = 0;
  uint32_t generation = 0;
  uint32_t column = 0;
  uint64_t schema_hash = 0;
  uint64_t events = 0;
  uint32_t s_blocks = 0;
  uint8_t log2_ks = 0;
  uint32_t crc_directory = 0;

  std::vector<uint8_t> Serialize() const;  // kCopyHeaderSize bytes
  // Magic, version, header CRC, S blocks = ceil(events / 2^log2_ks), and a directory that fits
  // in file_size after the header.
  static Result<CopyHeader> Parse(std::span<const uint8_t> bytes, uint64_t file_size);
  uint64_t directory_offset(uint64_t file_size) const {
    return file_size - uint64_t{s_blocks} * kSDirEntryBytes;
  }
};

// The directory (the file's last 16 * s_blocks bytes): CRC checked, every chunk inside
// [header end, directory start), in order, not overlapping.
Result<std::vector<ChunkRef>> ParseCopyDirectory(std::span<const uint8_t> bytes,
                                                 const CopyHeader& header,
                                                 uint64_t file_size);

// Writes one copy file: Add the column's values of each S block in order, then Finish. The
// file is created (truncated) by Open and is complete only after Finish returns (fsynced).
// Not thread-safe.
class CopyWriter {
 public:
  static Result<CopyWriter> Open(const std::string& path, const CopyHeader& header);
  // values: the column's raw values of the next S block (native = little-endian), width w.
  Status Add(std::span<const uint8_t> values, size_t w, const codec::Setting& setting);
  // Directory and header written, file fsynced and closed. Returns the file's size.
  Result<uint64_t> Finish();
  const std::string& path() const { return path_; }
  uint64_t blocks_added() const { return dir_.size(); }

 private:
  CopyWriter() = default;
  std::string path_;
  Fd fd_;
  CopyHeader header_;
  uint64_t end_ = kCopyHeaderSize;
  std::vector<ChunkRef> dir_;
  ByteVector shuffled_;
  ByteVector stored_;
  ByteVector check_;
};

}  // namespace ferry::store
