// Cursor: a bounds-checked big-endian reader over a byte span, for ROOT's serialised objects
// (ByteCursor: what it shares with RNTuple's little-endian LeCursor).
//
// Failure is sticky: a read past the end sets ok() to false and returns zero values, so parsing
// code reads a run of fields and checks ok() once (no per-field branching on the happy path).
// A Cursor does not own its bytes; the span must outlive it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/endian.h"

namespace ferry::rootio {

enum class ByteOrder : uint8_t { kBig, kLittle };

// What every reader of serialised bytes shares: the bounds, the sticky failure and the typed
// loads in one byte order. Cursor (ROOT's big-endian objects, below) and LeCursor (RNTuple's
// little-endian envelopes, rntuple_frame.h) add their formats' own strings and moves.
template <ByteOrder kOrder>
class ByteCursor {
 public:
  explicit ByteCursor(std::span<const uint8_t> bytes, size_t pos = 0) : bytes_(bytes), pos_(pos) {
    if (pos > bytes.size()) {
      Fail();
    }
  }

  bool ok() const { return ok_; }
  void Fail() {
    ok_ = false;
    pos_ = bytes_.size();
  }
  size_t pos() const { return pos_; }
  size_t size() const { return bytes_.size(); }
  size_t remaining() const { return bytes_.size() - pos_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

  uint8_t U8() { return Load<uint8_t>(); }
  int8_t I8() { return Load<int8_t>(); }
  bool Bool() { return Load<uint8_t>() != 0; }
  uint16_t U16() { return Load<uint16_t>(); }
  int16_t I16() { return Load<int16_t>(); }
  uint32_t U32() { return Load<uint32_t>(); }
  int32_t I32() { return Load<int32_t>(); }
  uint64_t U64() { return Load<uint64_t>(); }
  int64_t I64() { return Load<int64_t>(); }
  float F32() { return Load<float>(); }
  double F64() { return Load<double>(); }

  std::span<const uint8_t> Bytes(size_t n) {
    if (n > remaining()) {
      Fail();
      return {};
    }
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

 protected:
  template <class T>
  T Load() {
    if (sizeof(T) > remaining()) {
      Fail();
      return T{};
    }
    T v = kOrder == ByteOrder::kBig ? LoadBE<T>(bytes_.data() + pos_)
                                    : LoadLE<T>(bytes_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

class Cursor : public ByteCursor<ByteOrder::kBig> {
 public:
  using ByteCursor::ByteCursor;

  void Seek(size_t pos) {
    if (pos > bytes_.size()) {
      Fail();
    } else if (ok_) {
      pos_ = pos;
    }
  }
  void Skip(size_t n) {
    if (n > remaining()) {
      Fail();
    } else {
      pos_ += n;
    }
  }
  // A seek field: 8 bytes when wide, else 4 (unsigned).
  uint64_t Seek64(bool wide) { return wide ? Load<uint64_t>() : Load<uint32_t>(); }

  // ROOT TString: one length byte; 255 means a 4-byte big-endian length follows.
  std::string_view TString() {
    uint32_t n = U8();
    if (n == 255) {
      n = U32();
    }
    auto b = Bytes(n);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }

  // NUL-terminated string (class names in object tags).
  std::string_view CString() {
    size_t start = pos_;
    while (pos_ < bytes_.size() && bytes_[pos_] != 0) {
      ++pos_;
    }
    if (pos_ >= bytes_.size()) {
      Fail();
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + start), pos_ - start);
    ++pos_;
    return s;
  }
};

}  // namespace ferry::rootio
