// Little-endian byte building and bounds-checked parsing for on-disk structures (the event
// store, the replica manifest).
//
// ByteWriter appends to a vector it owns. ByteReader never reads past its span: a short read
// sets a sticky failure flag and yields zeros, so parsers read a run of fields and check ok()
// once. A ByteReader borrows its span, which must outlive it. Neither is thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/endian.h"

namespace ferry {

class ByteWriter {
 public:
  template <class T>
  void Put(T v) {
    size_t at = out_.size();
    out_.resize(at + sizeof(T));
    StoreLE<T>(out_.data() + at, v);
  }
  void U8(uint8_t v) { Put(v); }
  void U16(uint16_t v) { Put(v); }
  void U32(uint32_t v) { Put(v); }
  void I32(int32_t v) { Put(v); }
  void U64(uint64_t v) { Put(v); }
  void I64(int64_t v) { Put(v); }
  // u16 length + bytes; longer strings are cut at 65535 bytes.
  void Str(std::string_view s) {
    size_t n = s.size() > 0xFFFF ? 0xFFFF : s.size();
    U16(static_cast<uint16_t>(n));
    out_.insert(out_.end(), s.begin(), s.begin() + static_cast<ptrdiff_t>(n));
  }
  void Bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  size_t size() const { return out_.size(); }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }

  template <class T>
  T Get() {
    if (!ok_ || remaining() < sizeof(T)) {
      ok_ = false;
      pos_ = bytes_.size();
      return T{};
    }
    T v = LoadLE<T>(bytes_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }
  uint8_t U8() { return Get<uint8_t>(); }
  uint16_t U16() { return Get<uint16_t>(); }
  uint32_t U32() { return Get<uint32_t>(); }
  int32_t I32() { return Get<int32_t>(); }
  uint64_t U64() { return Get<uint64_t>(); }
  int64_t I64() { return Get<int64_t>(); }
  std::string Str() {
    uint16_t n = U16();
    if (!ok_ || remaining() < n) {
      ok_ = false;
      pos_ = bytes_.size();
      return {};
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  std::span<const uint8_t> Take(size_t n) {
    if (!ok_ || remaining() < n) {
      ok_ = false;
      pos_ = bytes_.size();
      return {};
    }
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace ferry
