// StreamBuffer: a growable big-endian byte buffer with ROOT's object framing (TBufferFile
// conventions), for serialising records that ROOT and other readers parse back.
//
//   - A versioned object is a 4-byte word (bit 0x40000000 set, low 30 bits = bytes that follow
//     the word) and a 2-byte class version; BeginObject writes both, EndObject patches the count.
//   - A polymorphic pointer is either 0 (null), a reference to an object written earlier (its
//     tag), or a byte count followed by a class tag: 0xFFFFFFFF and the NUL-terminated class name
//     the first time a class appears, later (0x80000000 | tag of that first occurrence).
//   - Tags are positions counted from the start of the key, i.e. payload position + fKeylen,
//     plus kMapOffset (2). The buffer therefore has to know the fKeylen of the record it will
//     become the payload of. See docs/format/root.md.
//
// Not thread-safe; a value type (copyable, movable).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/endian.h"

namespace ferry::rootwrite {

constexpr uint32_t kByteCountMask = 0x40000000;
constexpr uint32_t kClassMask = 0x80000000;
constexpr uint32_t kNewClassTag = 0xFFFFFFFF;
constexpr uint32_t kMapOffset = 2;

// TObject::fBits values ROOT writes for the objects of a flat tree (observed in ROOT 6 files):
// kNotDeleted | kIsOnHeap, plus class-specific bits.
constexpr uint32_t kBitsObject = 0x03000000;
constexpr uint32_t kBitsTree = 0x03000008;          // + kMustCleanup
constexpr uint32_t kBitsBranch = 0x03400000;        // + TBranch::kDoNotProcessProcessIDs
constexpr uint32_t kBitsStreamerInfo = 0x03010000;  // + TStreamerInfo::kIsCompiled
constexpr uint32_t kBitsCollection = 0x02000000;    // kNotDeleted only

class StreamBuffer {
 public:
  // key_len: fKeylen of the record whose payload this buffer holds (0 for raw scratch use).
  explicit StreamBuffer(uint32_t key_len = 0) : key_len_(key_len) {}

  size_t size() const { return buf_.size(); }
  const std::vector<uint8_t>& bytes() const { return buf_; }
  std::vector<uint8_t> Take() { return std::move(buf_); }
  void Reserve(size_t n) { buf_.reserve(n); }
  // Empties the buffer (keeping its memory) and forgets the classes seen.
  void Clear() {
    buf_.clear();
    classes_.clear();
  }
  uint32_t key_len() const { return key_len_; }

  void U8(uint8_t v) { buf_.push_back(v); }
  void Bool(bool v) { buf_.push_back(v ? 1 : 0); }
  void I16(int16_t v) { Store(v); }
  void U16(uint16_t v) { Store(v); }
  void I32(int32_t v) { Store(v); }
  void U32(uint32_t v) { Store(v); }
  void I64(int64_t v) { Store(v); }
  void U64(uint64_t v) { Store(v); }
  void F32(float v) { Store(v); }
  void F64(double v) { Store(v); }
  // A seek field: 8 bytes when wide, else 4.
  void Seek(uint64_t v, bool wide) {
    if (wide) {
      U64(v);
    } else {
      U32(static_cast<uint32_t>(v));
    }
  }
  void Bytes(std::span<const uint8_t> b) { buf_.insert(buf_.end(), b.begin(), b.end()); }
  void Zeros(size_t n) { buf_.resize(buf_.size() + n, 0); }
  // ROOT TString: one length byte, or 255 and a 4-byte length for 255 bytes and more.
  void TString(std::string_view s);
  // NUL-terminated characters (class names in class tags).
  void CString(std::string_view s);

  // Overwrites 4 bytes at position at (which must already be written).
  void PatchU32(size_t at, uint32_t v) { StoreBE(buf_.data() + at, v); }

  // Starts a versioned object: a byte-count placeholder and the version. Returns the position
  // to hand to EndObject.
  size_t BeginObject(int16_t version);
  // Patches the byte count of the object started at start to cover everything written since.
  void EndObject(size_t start);
  // TObject body (no byte count): version 1, fUniqueID, fBits.
  void TObject(uint32_t bits, uint32_t unique_id = 0);
  // TNamed: framed, TObject, name and title.
  void TNamed(std::string_view name, std::string_view title, uint32_t bits = kBitsObject);

  // Starts a non-null polymorphic pointer to a new object of class_name: byte-count
  // placeholder plus class tag. Returns the position to hand to EndObject; TagAt(that) is the
  // tag later references use for this object.
  size_t BeginPointer(std::string_view class_name);
  void NullPointer() { U32(0); }
  // A reference to an object written earlier in this buffer.
  void Reference(uint32_t tag) { U32(tag); }
  // The tag of the object whose pointer started at position start.
  uint32_t TagAt(size_t start) const {
    return static_cast<uint32_t>(start) + key_len_ + kMapOffset;
  }

 private:
  template <class T>
  void Store(T v) {
    size_t at = buf_.size();
    buf_.resize(at + sizeof(T));
    StoreBE(buf_.data() + at, v);
  }

  std::vector<uint8_t> buf_;
  uint32_t key_len_;
  // Classes seen so far and the tag of their first class word (few: a linear scan is fine).
  std::vector<std::pair<std::string, uint32_t>> classes_;
};

}  // namespace ferry::rootwrite
