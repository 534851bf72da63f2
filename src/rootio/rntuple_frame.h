// The serialization primitives of RNTuple envelopes: a little-endian bounds-checked reader,
// strings, feature flags, record and list frames, locators and envelope links.
//
//   string         u32 length, then UTF-8 bytes
//   feature flags  u64 words, continued while a word is negative (its top bit is set)
//   frame          i64 size (>0 record frame, <0 list frame; |size| counts the whole frame),
//                  then u32 item count for list frames
//   locator        i32 size >= 0: u64 offset follows (standard, in-file); size < 0: -size packs
//                  the locator's own length (bits 0-15), a reserved byte (16-23) and the type
//                  (24-30); type 1 ("large") carries u64 size, then u64 offset
//   envelope link  u64 uncompressed length, then a locator
//
// Format: docs/format/rntuple.md ("Envelopes, frames and locators").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/endian.h"
#include "base/result.h"
#include "rootio/cursor.h"

namespace ferry::rootio {

// A reader over little-endian bytes with a sticky failure flag, as Cursor is for ROOT's
// big-endian objects: a read past the end sets ok() to false and yields zeros. The span must
// outlive the reader.
class LeCursor : public ByteCursor<ByteOrder::kLittle> {
 public:
  explicit LeCursor(std::span<const uint8_t> bytes) : ByteCursor(bytes) {}

  // Moves to pos; fails when pos is before the current position or past the end, so a frame
  // size can never move the reader backwards (no loops on crafted input).
  void SeekForward(size_t pos) {
    if (pos < pos_ || pos > bytes_.size()) {
      Fail();
    } else {
      pos_ = pos;
    }
  }
  std::string String();
};

// A frame being read: where it ends, and for list frames the number of items.
struct Frame {
  size_t end = 0;
  bool is_list = false;
  uint32_t items = 0;
};

constexpr size_t kRecordFramePreamble = 8;
constexpr size_t kListFramePreamble = 12;

// Reads a frame preamble. Corruption (naming `what`) when the size is smaller than the
// preamble, runs past the bytes, or the frame kind is not the expected one.
Result<Frame> ReadFrame(LeCursor& c, bool want_list, std::string_view what);
// Moves to the end of the frame (skipping fields a newer writer appended); Corruption when
// the frame's content was read past its end.
Status EndFrame(LeCursor& c, const Frame& f, std::string_view what);

// Reads feature flags; Unsupported when any bit is set (format 1.0 defines none).
Status ReadFeatureFlags(LeCursor& c, std::string_view what);

struct Locator {
  uint64_t offset = 0;
  uint64_t size = 0;  // bytes on storage (compressed)
};

// The fields packed into the negated first word of a non-standard locator.
struct LocatorHead {
  static constexpr uint32_t kOwnSizeMask = 0xFFFF;  // bits 0-15: the locator's own length
  static constexpr int kTypeShift = 24;             // bits 24-30: the locator type
  static constexpr uint32_t kTypeMask = 0x7F;
};
constexpr uint8_t kLocatorTypeLarge = 0x01;
constexpr size_t kStandardLocatorSize = 12;

Result<Locator> ReadLocator(LeCursor& c, std::string_view what);

struct EnvelopeLink {
  uint64_t length = 0;  // uncompressed
  Locator locator;
};

Result<EnvelopeLink> ReadEnvelopeLink(LeCursor& c, std::string_view what);

}  // namespace ferry::rootio
