#include "rootwrite/rntuple_frame_writer.h"

#include <cstring>
#include <limits>

namespace ferry::rootwrite {

void LeWriter::String(std::string_view s) {
  U32(static_cast<uint32_t>(s.size()));
  size_t at = bytes_.size();
  bytes_.resize(at + s.size());
  std::memcpy(bytes_.data() + at, s.data(), s.size());
}

LeWriter::FrameStart LeWriter::BeginRecord() {
  FrameStart f{bytes_.size(), false};
  I64(0);  // the size, written by EndFrame
  return f;
}

LeWriter::FrameStart LeWriter::BeginList(uint32_t items) {
  FrameStart f{bytes_.size(), true};
  I64(0);
  U32(items);
  return f;
}

void LeWriter::EndFrame(const FrameStart& frame) {
  // The size counts the whole frame, preamble included; list frames store it negated.
  auto size = static_cast<int64_t>(bytes_.size() - frame.pos);
  StoreLE<int64_t>(bytes_.data() + frame.pos, frame.is_list ? -size : size);
}

void LeWriter::Locator(const rootio::Locator& locator) {
  if (locator.size <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    I32(static_cast<int32_t>(locator.size));
    U64(locator.offset);
    return;
  }
  // Large locator: the negated first word packs the locator's own length and its type.
  constexpr uint32_t kLength = 4 + 8 + 8;
  I32(-static_cast<int32_t>(kLength | (uint32_t{rootio::kLocatorTypeLarge} << 24)));
  U64(locator.size);
  U64(locator.offset);
}

void LeWriter::EnvelopeLink(const rootio::EnvelopeLink& link) {
  U64(link.length);
  Locator(link.locator);
}

}  // namespace ferry::rootwrite
