// Object framing inside a streamed ROOT record (TBufferFile conventions).
//
// - A versioned object starts with a 4-byte word whose bit 0x40000000 marks a byte count of
//   what follows, then a 2-byte class version. Without the bit, the first 2 bytes are the
//   version (old style, or TObject itself).
// - A polymorphic pointer starts with a tag: 0 = null; a byte count followed by a class tag
//   0xFFFFFFFF + NUL-terminated class name = new class; a class tag with bit 0x80000000 = a
//   class seen before; a tag without those bits = an object streamed before.
// - Tags are buffer positions counted from the start of the key (payload position + fKeylen)
//   plus kMapOffset (2).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "base/result.h"
#include "rootio/cursor.h"

namespace ferry::rootio {

constexpr uint32_t kByteCountMask = 0x40000000;
constexpr uint32_t kClassMask = 0x80000000;
constexpr uint32_t kNewClassTag = 0xFFFFFFFF;
constexpr uint32_t kMapOffset = 2;

// Header of a versioned object. end is the position after the object when it had a byte count.
struct Framed {
  int16_t version = 0;
  size_t start = 0;
  size_t end = 0;
  bool counted = false;
};

Framed ReadFramed(Cursor& c);
// Moves to the end of a counted object; Corruption when the object has no count or overran it.
Status SkipToEnd(Cursor& c, const Framed& f, const char* what);
// TObject: version, fUniqueID, fBits (+ 2-byte pid when kIsReferenced).
void SkipTObject(Cursor& c);
// TNamed (framed TObject + name + title).
Status ReadTNamed(Cursor& c, std::string* name, std::string* title);

// Result of reading a polymorphic pointer.
struct ObjectTag {
  enum class Kind { kNull, kReference, kNew } kind = Kind::kNull;
  std::string class_name;  // kNew
  uint32_t reference = 0;  // kReference: the tag (key position + kMapOffset)
  uint32_t map_tag = 0;    // kNew: the tag under which this object is known to later references
  size_t end = 0;          // kNew with byte count: position after the object (0 if unknown)
};

// Reads the tags of one streamed record and resolves class references.
class TagReader {
 public:
  // key_offset: fKeylen of the record, so tags are key positions.
  explicit TagReader(uint32_t key_offset) : key_offset_(key_offset) {}
  Result<ObjectTag> Read(Cursor& c);
  uint32_t TagAt(size_t payload_pos) const {
    return static_cast<uint32_t>(payload_pos) + key_offset_ + kMapOffset;
  }

 private:
  uint32_t key_offset_;
  std::unordered_map<uint32_t, std::string> classes_;
};

}  // namespace ferry::rootio
