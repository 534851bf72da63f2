// Column: the values of one leaf over a range of entries, decoded to native endianness.
//
// Fixed-size leaves store fixed_len values per entry back to back. Jagged leaves and strings
// set jagged = true and keep num_entries + 1 offsets: entry i holds values (bytes, for strings)
// [offsets[i], offsets[i+1]). Values are packed in `bytes`; values<T>() views them typed (the
// buffer comes from operator new and is suitably aligned).
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/byte_vector.h"
#include "rootio/tree_model.h"

namespace ferry::rootio {

// A jagged column's entry boundaries (num_entries + 1 values). Copies share one vector until
// one of them changes it (copy on write): the fields of one collection hold the same offsets,
// and a reader that decodes the collection's index once gives it to each of them by Share()
// instead of copying 8 bytes per entry for every field. Reads never copy; the mutators below
// (and Mutable()) take a private vector first. clear() drops a shared vector rather than copy
// it, so the decoder that shared it can fill it again in place.
class Offsets {
 public:
  Offsets() = default;
  Offsets(std::initializer_list<uint64_t> values)  // NOLINT(google-explicit-constructor)
      : v_(std::make_shared<std::vector<uint64_t>>(values)) {}
  Offsets& operator=(std::initializer_list<uint64_t> values) {
    Mutable().assign(values);
    return *this;
  }

  size_t size() const { return v_ ? v_->size() : 0; }
  bool empty() const { return size() == 0; }
  uint64_t operator[](size_t i) const { return (*v_)[i]; }
  uint64_t front() const { return v_->front(); }
  uint64_t back() const { return v_->back(); }
  const uint64_t* data() const { return v_ ? v_->data() : nullptr; }
  const uint64_t* begin() const { return data(); }
  const uint64_t* end() const { return data() + size(); }
  operator std::span<const uint64_t>() const {  // NOLINT(google-explicit-constructor)
    return {data(), size()};
  }
  const std::vector<uint64_t>& vector() const { return v_ ? *v_ : Empty(); }
  bool operator==(const Offsets& o) const { return v_ == o.v_ || vector() == o.vector(); }

  // This holds other's vector, without copying it.
  void Share(const Offsets& other) { v_ = other.v_; }
  // Whether this and other hold the same vector (Share).
  bool SharesWith(const Offsets& other) const { return v_ != nullptr && v_ == other.v_; }

  std::vector<uint64_t>& Mutable() {
    if (!v_) {
      v_ = std::make_shared<std::vector<uint64_t>>();
    } else if (!Unique()) {
      v_ = std::make_shared<std::vector<uint64_t>>(*v_);
    }
    return *v_;
  }
  // A private vector for the caller to overwrite whole: this one as it is (size and values
  // kept, so a resize to the same size writes nothing) when no copy shares it, else a new
  // empty one; never a copy of shared values about to be replaced.
  std::vector<uint64_t>& Overwrite() {
    if (v_ && !Unique()) {
      v_.reset();
    }
    return Mutable();
  }
  void clear() {
    if (v_ && !Unique()) {
      v_.reset();
    } else if (v_) {
      v_->clear();
    }
  }
  void push_back(uint64_t x) { Mutable().push_back(x); }
  void resize(size_t n) { Mutable().resize(n); }
  void reserve(size_t n) { Mutable().reserve(n); }
  size_t capacity() const { return v_ ? v_->capacity() : 0; }
  template <std::input_iterator It>
  void assign(It first, It last) {
    Mutable().assign(first, last);
  }
  void assign(size_t n, uint64_t value) { Mutable().assign(n, value); }

 private:
  // No other Offsets holds the vector. The fence orders this holder's writes after the reads
  // another thread made through a copy it has since dropped (use_count() loads relaxed).
  bool Unique() const {
    if (v_.use_count() != 1) {
      return false;
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    return true;
  }
  static const std::vector<uint64_t>& Empty() {
    static const std::vector<uint64_t> empty;
    return empty;
  }
  std::shared_ptr<std::vector<uint64_t>> v_;
};

struct Column {
  LeafType type = LeafType::kUnknown;
  int64_t first_entry = 0;
  int64_t num_entries = 0;
  bool jagged = false;
  uint32_t fixed_len = 1;
  Offsets offsets;   // jagged only
  ByteVector bytes;  // resize() does not zero: decoding overwrites every byte

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
