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
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "base/byte_vector.h"
#include "rootio/leaf_type.h"

namespace ferry::rootio {

// A jagged column's entry boundaries (num_entries + 1 values). Copies share one vector until
// one of them changes it (copy on write): the fields of one collection hold the same offsets,
// and a reader that decodes the collection's index once gives it to each of them by Share()
// instead of copying 8 bytes per entry for every field. Reads never copy; the mutators below
// (and Mutable()) take a private vector first. clear() drops a shared vector rather than copy
// it, so the decoder that shared it can fill it again in place.
// The count of holders is our own atomic, not a shared_ptr's: whether a holder is the last one
// must be an acquire load (it orders this holder's writes after the reads another thread made
// through a copy it has since dropped), and shared_ptr only offers a relaxed use_count().
class Offsets {
 public:
  Offsets() = default;
  Offsets(std::initializer_list<uint64_t> values)  // NOLINT(google-explicit-constructor)
      : r_(NewRep(values)) {}
  Offsets(const Offsets& o) : r_(Ref(o.r_)) {}
  Offsets(Offsets&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  Offsets& operator=(const Offsets& o) {
    if (this != &o) {
      Share(o);
    }
    return *this;
  }
  Offsets& operator=(Offsets&& o) noexcept {
    if (this != &o) {
      Unref(r_);
      r_ = std::exchange(o.r_, nullptr);
    }
    return *this;
  }
  Offsets& operator=(std::initializer_list<uint64_t> values) {
    Mutable().assign(values);
    return *this;
  }
  ~Offsets() { Unref(r_); }

  size_t size() const { return r_ != nullptr ? r_->v.size() : 0; }
  bool empty() const { return size() == 0; }
  uint64_t operator[](size_t i) const { return r_->v[i]; }
  uint64_t front() const { return r_->v.front(); }
  uint64_t back() const { return r_->v.back(); }
  const uint64_t* data() const { return r_ != nullptr ? r_->v.data() : nullptr; }
  const uint64_t* begin() const { return data(); }
  const uint64_t* end() const { return data() + size(); }
  operator std::span<const uint64_t>() const {  // NOLINT(google-explicit-constructor)
    return {data(), size()};
  }
  const std::vector<uint64_t>& vector() const { return r_ != nullptr ? r_->v : Empty(); }
  bool operator==(const Offsets& o) const { return r_ == o.r_ || vector() == o.vector(); }

  // This holds other's vector, without copying it.
  void Share(const Offsets& other) {
    if (r_ != other.r_) {
      Rep* held = Ref(other.r_);
      Unref(r_);
      r_ = held;
    }
  }
  // Whether this and other hold the same vector (Share).
  bool SharesWith(const Offsets& other) const { return r_ != nullptr && r_ == other.r_; }
  // Whether another Offsets, maybe in another thread, still holds this one's vector.
  bool Shared() const { return r_ != nullptr && !Unique(); }

  std::vector<uint64_t>& Mutable() {
    if (r_ == nullptr) {
      r_ = NewRep({});
    } else if (!Unique()) {
      Rep* own = NewRep(r_->v);
      Unref(r_);
      r_ = own;
    }
    return r_->v;
  }
  // A private vector for the caller to overwrite whole: this one as it is (size and values
  // kept, so a resize to the same size writes nothing) when no copy shares it, else a new
  // empty one; never a copy of shared values about to be replaced.
  std::vector<uint64_t>& Overwrite() {
    if (r_ != nullptr && !Unique()) {
      Unref(std::exchange(r_, nullptr));
    }
    return Mutable();
  }
  void clear() {
    if (r_ != nullptr && !Unique()) {
      Unref(std::exchange(r_, nullptr));
    } else if (r_ != nullptr) {
      r_->v.clear();
    }
  }
  void push_back(uint64_t x) { Mutable().push_back(x); }
  void resize(size_t n) { Mutable().resize(n); }
  void reserve(size_t n) { Mutable().reserve(n); }
  size_t capacity() const { return r_ != nullptr ? r_->v.capacity() : 0; }
  template <std::input_iterator It>
  void assign(It first, It last) {
    Mutable().assign(first, last);
  }
  void assign(size_t n, uint64_t value) { Mutable().assign(n, value); }

 private:
  struct Rep {
    std::atomic<uint32_t> holders;
    std::vector<uint64_t> v;
  };
  // One holder; freed by the Unref that drops the last one.
  static Rep* NewRep(std::vector<uint64_t> v) {
    return new Rep{{1}, std::move(v)};  // NOLINT(cppcoreguidelines-owning-memory)
  }
  static Rep* Ref(Rep* r) {
    if (r != nullptr) {
      r->holders.fetch_add(1, std::memory_order_relaxed);
    }
    return r;
  }
  // Release: this holder's reads happen before the last holder's Unique() sees it gone.
  static void Unref(Rep* r) {
    if (r != nullptr && r->holders.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete r;  // NOLINT(cppcoreguidelines-owning-memory): the count owns it
    }
  }
  bool Unique() const { return r_->holders.load(std::memory_order_acquire) == 1; }
  static const std::vector<uint64_t>& Empty() {
    static const std::vector<uint64_t> empty;
    return empty;
  }
  Rep* r_ = nullptr;
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
