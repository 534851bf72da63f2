// TKey: the header of every record in a ROOT file.
//
//   0 fNbytes (record size on disk)  4 fVersion (i16; > 1000 => 64-bit seeks)  6 fObjlen
//   10 fDatime  14 fKeylen (i16)  16 fCycle (i16)  18 fSeekKey  fSeekPdir (4 or 8 bytes each)
//   then class name, name and title as TStrings. The payload is [fKeylen, fNbytes) and is
//   compressed when fNbytes - fKeylen != fObjlen. Format: docs/format/root.md ("Records").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "io/byte_source.h"
#include "rootio/cursor.h"

namespace ferry::rootio {

struct Key {
  int32_t nbytes = 0;
  int16_t version = 0;
  int32_t objlen = 0;
  uint32_t datime = 0;
  uint16_t keylen = 0;
  int16_t cycle = 0;
  uint64_t seek_key = 0;
  uint64_t seek_pdir = 0;
  std::string class_name;
  std::string name;
  std::string title;

  bool compressed() const { return nbytes - keylen != objlen; }
};

// Parses a key header at the cursor (leaves the cursor after the title). Sets the cursor's
// failure flag on truncation; checks field sanity and returns Corruption on nonsense.
Result<Key> ParseKey(Cursor& c);

// Upper bound used to read a key header before its length is known.
constexpr size_t kKeyHeaderReadSize = 512;

// Reads the key header at offset (one read of up to kKeyHeaderReadSize bytes).
Result<Key> ReadKey(io::ByteSource& source, uint64_t offset);

// Reads the record of key and returns its payload, decompressed (fObjlen bytes).
Result<std::vector<uint8_t>> ReadPayload(io::ByteSource& source, const Key& key);

// Decompresses a record's payload bytes (those after fKeylen) into out (resized to objlen).
// Memory grows block by block, so a lying header cannot force a huge allocation.
Status DecodePayload(std::span<const uint8_t> stored, int32_t objlen, ByteVector* out);

}  // namespace ferry::rootio
