// Column: the values of one leaf over a range of entries, decoded to native endianness.
//
// Fixed-size leaves store fixed_len values per entry back to back. Jagged leaves and strings
// set jagged = true and keep num_entries + 1 offsets: entry i holds values (bytes, for strings)
// [offsets[i], offsets[i+1]). Values are packed in `bytes`; values<T>() views them typed (the
// buffer comes from operator new and is suitably aligned).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/byte_vector.h"
#include "rootio/tree_model.h"

namespace ferry::rootio {

struct Column {
  LeafType type = LeafType::kUnknown;
  int64_t first_entry = 0;
  int64_t num_entries = 0;
  bool jagged = false;
  uint32_t fixed_len = 1;
  std::vector<uint64_t> offsets;  // jagged only
  ByteVector bytes;               // resize() does not zero: decoding overwrites every byte

  size_t value_size() const { return LeafTypeSize(type); }
  size_t num_values() const {
    return type == LeafType::kString ? offsets.size() - (offsets.empty() ? 0 : 1)
                                     : bytes.size() / (value_size() == 0 ? 1 : value_size());
  }
  template <class T>
  std::span<const T> values() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  // Range of value indices of entry i (relative to first_entry).
  std::pair<uint64_t, uint64_t> EntryValues(int64_t i) const {
    if (jagged) {
      return {offsets[static_cast<size_t>(i)], offsets[static_cast<size_t>(i) + 1]};
    }
    auto b = static_cast<uint64_t>(i) * fixed_len;
    return {b, b + fixed_len};
  }
  std::string_view StringAt(int64_t i) const {
    auto [b, e] = EntryValues(i);
    return {reinterpret_cast<const char*>(bytes.data() + b), static_cast<size_t>(e - b)};
  }
  // Value k converted, for counters and generic printing.
  uint64_t AsUint64(size_t k) const;
  double AsDouble(size_t k) const;
};

// Appends count big-endian values of type t from src to dst as native values.
void AppendSwapped(LeafType t, const uint8_t* src, size_t count, ByteVector* dst);

}  // namespace ferry::rootio
