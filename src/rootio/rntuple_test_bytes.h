// Test helpers: RNTuple structures built byte by byte from the format specification
// (docs/format/rntuple.md), for tests that need bytes no real file holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/endian.h"
#include "base/hash.h"

namespace ferry::rootio::testbytes {

// A little-endian byte builder.
struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& Put(T v) {
    size_t at = b.size();
    b.resize(at + sizeof(T));
    StoreLE<T>(b.data() + at, v);
    return *this;
  }
  Bytes& Str(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& Append(const std::vector<uint8_t>& more) {
    b.insert(b.end(), more.begin(), more.end());
    return *this;
  }
};

inline std::vector<uint8_t> RecordFrame(const std::vector<uint8_t>& content) {
  return Bytes().Put<int64_t>(static_cast<int64_t>(8 + content.size())).Append(content).b;
}

inline std::vector<uint8_t> ListFrame(uint32_t items, const std::vector<uint8_t>& content) {
  return Bytes()
      .Put<int64_t>(-static_cast<int64_t>(12 + content.size()))
      .Put<uint32_t>(items)
      .Append(content)
      .b;
}

// An envelope: type and length in one word, the payload, and the XXH3 of both.
inline std::vector<uint8_t> MakeEnvelope(uint16_t type, const std::vector<uint8_t>& payload) {
  uint64_t length = 8 + payload.size() + 8;
  std::vector<uint8_t> env = Bytes().Put<uint64_t>(type | (length << 16)).Append(payload).b;
  return Bytes().Append(env).Put<uint64_t>(hash::Xxh3(env.data(), env.size())).b;
}

}  // namespace ferry::rootio::testbytes
