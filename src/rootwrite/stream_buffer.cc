#include "rootwrite/stream_buffer.h"

#include <cassert>

namespace ferry::rootwrite {

void StreamBuffer::TString(std::string_view s) {
  if (s.size() < 255) {
    U8(static_cast<uint8_t>(s.size()));
  } else {
    U8(255);
    U32(static_cast<uint32_t>(s.size()));
  }
  Bytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

void StreamBuffer::CString(std::string_view s) {
  Bytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  U8(0);
}

size_t StreamBuffer::BeginObject(int16_t version) {
  size_t start = buf_.size();
  U32(0);
  I16(version);
  return start;
}

void StreamBuffer::EndObject(size_t start) {
  size_t n = buf_.size() - start - 4;
  assert(n < kByteCountMask);
  PatchU32(start, kByteCountMask | static_cast<uint32_t>(n));
}

void StreamBuffer::TObject(uint32_t bits, uint32_t unique_id) {
  I16(1);
  U32(unique_id);
  U32(bits);
}

void StreamBuffer::TNamed(std::string_view name, std::string_view title, uint32_t bits) {
  size_t at = BeginObject(1);
  TObject(bits);
  TString(name);
  TString(title);
  EndObject(at);
}

size_t StreamBuffer::BeginPointer(std::string_view class_name) {
  size_t start = buf_.size();
  U32(0);  // byte count, patched by EndObject
  for (const auto& [name, tag] : classes_) {
    if (name == class_name) {
      U32(kClassMask | tag);
      return start;
    }
  }
  classes_.emplace_back(std::string(class_name), TagAt(buf_.size()));
  U32(kNewClassTag);
  CString(class_name);
  return start;
}

}  // namespace ferry::rootwrite
