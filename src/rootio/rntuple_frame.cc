#include "rootio/rntuple_frame.h"

#include <string>

namespace ferry::rootio {

std::string LeCursor::String() {
  uint32_t n = U32();
  if (n > remaining()) {
    Fail();
    return {};
  }
  std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
  pos_ += n;
  return s;
}

Result<Frame> ReadFrame(LeCursor& c, bool want_list, std::string_view what) {
  size_t start = c.pos();
  int64_t size = c.I64();
  Frame f;
  f.is_list = size < 0;
  // Negating INT64_MIN is undefined; no frame can be that large anyway.
  uint64_t abs_size = size < 0 ? 0 - static_cast<uint64_t>(size) : static_cast<uint64_t>(size);
  if (f.is_list) {
    f.items = c.U32();
  }
  size_t preamble = f.is_list ? kListFramePreamble : kRecordFramePreamble;
  if (!c.ok()) {
    return CorruptionError(std::string(what) + ": frame truncated");
  }
  if (f.is_list != want_list) {
    return CorruptionError(std::string(what) + ": expected a " + (want_list ? "list" : "record")
                           + " frame");
  }
  if (abs_size < preamble || abs_size > c.bytes().size() - start) {
    return CorruptionError(std::string(what) + ": frame size " + std::to_string(abs_size)
                           + " does not fit the " + std::to_string(c.bytes().size() - start)
                           + " bytes left");
  }
  f.end = start + static_cast<size_t>(abs_size);
  return f;
}

Status EndFrame(LeCursor& c, const Frame& f, std::string_view what) {
  if (!c.ok() || c.pos() > f.end) {
    return CorruptionError(std::string(what) + ": content runs past the frame's end");
  }
  c.SeekForward(f.end);
  return OkStatus();
}

Status ReadFeatureFlags(LeCursor& c, std::string_view what) {
  // A negative word announces further words; since format 1.0 defines no flag at all, any
  // set bit (the continuation bit included) is a feature this reader does not know.
  uint64_t word = c.U64();
  if (!c.ok()) {
    return CorruptionError(std::string(what) + ": feature flags truncated");
  }
  if (word != 0) {
    return UnsupportedError(std::string(what) + ": unknown feature flags set ("
                            + std::to_string(word) + ")");
  }
  return OkStatus();
}

Result<Locator> ReadLocator(LeCursor& c, std::string_view what) {
  size_t start = c.pos();
  int32_t head = c.I32();
  Locator loc;
  if (head >= 0) {
    loc.size = static_cast<uint64_t>(head);
    loc.offset = c.U64();
  } else {
    auto packed = static_cast<uint32_t>(0 - static_cast<int64_t>(head));
    size_t own_size = packed & LocatorHead::kOwnSizeMask;
    auto type = static_cast<uint8_t>((packed >> LocatorHead::kTypeShift) & LocatorHead::kTypeMask);
    if (type != kLocatorTypeLarge) {
      return UnsupportedError(std::string(what) + ": locator type " + std::to_string(type)
                              + " is not a file locator");
    }
    loc.size = c.U64();
    loc.offset = c.U64();
    if (own_size < c.pos() - start) {
      return CorruptionError(std::string(what) + ": large locator claims "
                             + std::to_string(own_size) + " bytes");
    }
    c.SeekForward(start + own_size);
  }
  if (!c.ok()) {
    return CorruptionError(std::string(what) + ": locator truncated");
  }
  return loc;
}

Result<EnvelopeLink> ReadEnvelopeLink(LeCursor& c, std::string_view what) {
  EnvelopeLink link;
  link.length = c.U64();
  link.locator = FERRY_TRY(ReadLocator(c, what));
  return link;
}

}  // namespace ferry::rootio
