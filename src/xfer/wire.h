// Little-endian payload encoding for the transfer protocol (docs/format/transfer.md).
//
// WireWriter appends fixed-width integers and length-prefixed strings to a byte vector.
// WireReader reads them back with bounds checks and a sticky failure flag: after the first
// out-of-range read every later read returns zero/empty and ok() is false, so a decoder can read
// a whole record and check once. Neither allocates beyond the strings it returns.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/endian.h"

namespace ferry::xfer {

class WireWriter {
 public:
  explicit WireWriter(std::vector<uint8_t>& out) : out_(out) {}

  template <class T>
  void Put(T v) {
    size_t at = out_.size();
    out_.resize(at + sizeof(T));
    StoreLE<T>(out_.data() + at, v);
  }
  void Bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  // u16 length, then the bytes (callers keep strings under 64 KiB).
  void String16(std::string_view s) {
    Put<uint16_t>(static_cast<uint16_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  size_t size() const { return out_.size(); }

 private:
  std::vector<uint8_t>& out_;
};

class WireReader {
 public:
  explicit WireReader(std::span<const uint8_t> in) : in_(in) {}

  template <class T>
  T Get() {
    if (!ok_ || in_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return T{};
    }
    T v = LoadLE<T>(in_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }
  // Copies n bytes into out; zero-fills and fails when fewer remain.
  void Bytes(std::span<uint8_t> out) {
    if (!ok_ || in_.size() - pos_ < out.size()) {
      ok_ = false;
      std::memset(out.data(), 0, out.size());
      return;
    }
    std::memcpy(out.data(), in_.data() + pos_, out.size());
    pos_ += out.size();
  }
  std::string String16() {
    auto n = Get<uint16_t>();
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  // The unread rest (e.g. a trailing message).
  std::string_view Rest() {
    std::string_view s(reinterpret_cast<const char*>(in_.data() + pos_), in_.size() - pos_);
    pos_ = in_.size();
    return s;
  }
  size_t remaining() const { return in_.size() - pos_; }
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == in_.size(); }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace ferry::xfer
