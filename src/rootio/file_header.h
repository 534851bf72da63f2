// The ROOT file header (byte 0 of every file) and the TDirectory record.
//
//   0  "root"          4  fVersion (+1000000 => big form, 64-bit seeks)
//   8  fBEGIN         12  fEND            then fSeekFree, fNbytesFree, nfree, fNbytesName,
//   fUnits (1 byte), fCompress, fSeekInfo, fNbytesInfo, UUID. Seeks are 4 bytes in the small
//   form and 8 in the big form. Details: docs/format/root.md.
#pragma once

#include <cstdint>
#include <span>

#include "base/result.h"

namespace ferry::rootio {

struct FileHeader {
  int32_t version = 0;  // 10000*major + 100*minor + patch of the writing ROOT (big offset removed)
  bool big = false;     // 64-bit seeks
  int32_t begin = 0;
  uint64_t end = 0;
  uint64_t seek_free = 0;
  int32_t nbytes_free = 0;
  int32_t nfree = 0;
  int32_t nbytes_name = 0;
  uint8_t units = 4;
  int32_t compress = 0;
  uint64_t seek_info = 0;
  int32_t nbytes_info = 0;
};

// Bytes to read to be sure to cover the header.
constexpr size_t kFileHeaderReadSize = 100;

Result<FileHeader> ParseFileHeader(std::span<const uint8_t> bytes, uint64_t file_size);

// A TDirectory record (top directory at fBEGIN + fNbytesName, or a subdirectory's payload).
struct DirectoryRecord {
  int16_t version = 0;
  int32_t nbytes_keys = 0;
  int32_t nbytes_name = 0;
  uint64_t seek_dir = 0;
  uint64_t seek_parent = 0;
  uint64_t seek_keys = 0;
};

Result<DirectoryRecord> ParseDirectoryRecord(std::span<const uint8_t> bytes);

}  // namespace ferry::rootio
