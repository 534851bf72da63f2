// A sample flat tree with every branch shape the writer supports (test support, not part of
// ferry_rootwrite): bool, every signed/unsigned integer width, float, double, a fixed array,
// a counter with jagged float and bool branches, and strings (some longer than 255 bytes).
// Values are functions of the entry number, so readers can check them without the writer.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "codec/compression.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/key_header.h"
#include "rootwrite/tree_writer.h"

namespace ferry::rootwrite::sample {

// File options with a fixed date and UUID seed, so that equal content gives equal bytes.
inline FileOptions Fixed(codec::Setting s = {codec::Algorithm::kZlib, 1}) {
  FileOptions o;
  o.compression = s;
  o.datime = PackDatime(1700000000);
  o.uuid_seed = 7;
  return o;
}

constexpr int kEntries = 1000;

inline uint32_t Count(int e) {
  return static_cast<uint32_t>((e * 7) % 6);
}
inline float Pt(int e, uint32_t j) {
  return 10.0f + static_cast<float>(e) * 0.5f + static_cast<float>(j);
}
inline bool Id(int e, uint32_t j) {
  return (e + static_cast<int>(j)) % 2 == 0;
}
inline std::string Str(int e) {
  return e % 50 == 0 ? std::string(300, static_cast<char>('a' + e % 26))
                     : "ev-" + std::to_string(e);
}
inline uint64_t Event(int e) {
  return (uint64_t{1} << 40) + static_cast<uint64_t>(e) * 17;
}
inline int64_t I64(int e) {
  return -static_cast<int64_t>(e) * 10000000000ll;
}
// with_nan: entry 5 of "d" is NaN (JSON-based checks leave it out).
inline double D(int e, bool with_nan) {
  return with_nan && e == 5 ? __builtin_nan("") : e / 7.0;
}

// Writes the sample tree "Events" (plus a second, 3-entry tree "Meta" when two_trees).
Status Write(const std::string& path,
             const FileOptions& file_options,
             const TreeOptions& tree_options,
             bool with_nan,
             bool two_trees = false);

}  // namespace ferry::rootwrite::sample
