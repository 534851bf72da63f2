// The ROOT::RNTuple anchor: the one indexed object of an RNTuple in a ROOT file, pointing at
// its header and footer envelopes. Streamed like any ROOT object, so it is big-endian:
//
//   0  u32 byte count (| 0x40000000; ROOT's covers bytes [4, 70), not the checksum)
//   4  u16 class version
//   6  u16 epoch, major, minor, patch (the format version of the writer)
//   14 u64 seek header, nbytes header, len header, seek footer, nbytes footer, len footer,
//      max key size
//   70 u64 XXH3-64 of bytes [6, 70)
//
// Later class versions may append fields before the checksum, which always takes the last 8
// bytes and covers everything after the class version. Format: docs/format/rntuple.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "rootio/root_file.h"

namespace ferry::rootio {

inline constexpr std::string_view kRntupleClassName = "ROOT::RNTuple";

struct AnchorLayout {
  static constexpr size_t kByteCount = 0;
  static constexpr size_t kClassVersion = 4;
  static constexpr size_t kChecksummedBegin = 6;  // the epoch field
  static constexpr size_t kVersionFields = 4;     // epoch, major, minor, patch (u16 each)
  static constexpr size_t kSizeFields = 7;        // seeks, sizes, max key size (u64 each)
  static constexpr size_t kChecksumSize = 8;
  static constexpr size_t kMinSize =
      kChecksummedBegin + 2 * kVersionFields + 8 * kSizeFields + kChecksumSize;  // 78
};

struct Anchor {
  uint16_t epoch = 0;
  uint16_t major = 0;
  uint16_t minor = 0;
  uint16_t patch = 0;
  uint64_t seek_header = 0;
  uint64_t nbytes_header = 0;
  uint64_t len_header = 0;
  uint64_t seek_footer = 0;
  uint64_t nbytes_footer = 0;
  uint64_t len_footer = 0;
  uint64_t max_key_size = 0;  // RBlobs larger than this are split across several keys

  std::string Version() const;  // "1.0.0.0"
};

// Parses an anchor object's decompressed payload: size, checksum and epoch (only epoch 1 is
// readable) checked. Corruption on a bad checksum or size; Unsupported on another epoch.
// `what` names the anchor in errors ("RNTuple 'Events' anchor").
Result<Anchor> ParseAnchor(std::span<const uint8_t> payload, std::string_view what);

// An RNTuple found among a file's objects.
struct RntupleEntry {
  std::string path;  // "dir/name"
  Key key;
};

// Every ROOT::RNTuple object of the file (highest cycle of each name), in directory order.
Result<std::vector<RntupleEntry>> FindRntuples(const RootFile& file);

// Reads and parses the anchor behind a key.
Result<Anchor> ReadAnchor(const RootFile& file, const Key& key);

}  // namespace ferry::rootio
