// Writing the serialization primitives of RNTuple envelopes: little-endian integers, strings,
// feature flags, record and list frames, locators and envelope links. The byte layouts are
// the reader's (rootio/rntuple_frame.h, docs/format/rntuple.md "Envelopes, frames and
// locators"); this is their inverse, and the reader's tests are the check of record.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/endian.h"
#include "rootio/rntuple_frame.h"

namespace ferry::rootwrite {

// Appends little-endian values to a byte vector it owns. Frames are opened with BeginRecord or
// BeginList and closed with EndFrame, which writes the frame's size into its preamble; frames
// nest. Not thread-safe.
class LeWriter {
 public:
  void U16(uint16_t v) { Store(v); }
  void U32(uint32_t v) { Store(v); }
  void I32(int32_t v) { Store(v); }
  void U64(uint64_t v) { Store(v); }
  void I64(int64_t v) { Store(v); }
  void F64(double v) { Store(v); }
  void String(std::string_view s);
  // Format 1.0 defines no feature: one zero word.
  void FeatureFlags() { U64(0); }

  // A frame's start, to hand back to EndFrame.
  struct FrameStart {
    size_t pos = 0;
    bool is_list = false;
  };
  FrameStart BeginRecord();
  FrameStart BeginList(uint32_t items);
  void EndFrame(const FrameStart& frame);

  // The standard locator (i32 size, u64 offset), or the large one when the size needs more
  // than 31 bits.
  void Locator(const rootio::Locator& locator);
  void EnvelopeLink(const rootio::EnvelopeLink& link);

  size_t size() const { return bytes_.size(); }
  std::vector<uint8_t>& bytes() { return bytes_; }
  std::vector<uint8_t> Take() { return std::move(bytes_); }

 private:
  template <class T>
  void Store(T v) {
    size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    StoreLE<T>(bytes_.data() + at, v);
  }

  std::vector<uint8_t> bytes_;
};

}  // namespace ferry::rootwrite
