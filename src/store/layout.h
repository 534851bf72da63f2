// Layout: the closed-form address of an event's index record (docs/format/store.md section 1).
//
// Three axes, run slot r, lumi slot l, event slot e, with extents R, L, E taken from the data.
// The mixed-radix entry is (r * L + l) * E + e; shard r holds entries [r*L*E, (r+1)*L*E) and
// the record of (l, e) sits at index_offset + (l * E + e) * record_size of that shard.
// Make() validates: no zero extent or record size, and no product or sum that overflows 64 bits
// (so Compose/RecordOffset never wrap for in-range slots). Plain value; thread-safe to share.
#pragma once

#include <cstdint>

#include "base/result.h"

namespace ferry::store {

struct Slots {
  uint64_t run = 0;
  uint64_t lumi = 0;
  uint64_t event = 0;
  bool operator==(const Slots&) const = default;
};

class Layout {
 public:
  Layout() = default;
  // kCorruption when an extent or the record size is zero or the grid overflows 64 bits.
  static Result<Layout> Make(
      uint64_t runs, uint64_t lumis, uint64_t events, uint32_t record_size, uint64_t index_offset);

  uint64_t runs() const { return runs_; }
  uint64_t lumis() const { return lumis_; }
  uint64_t events() const { return events_; }
  uint32_t record_size() const { return record_size_; }
  uint64_t index_offset() const { return index_offset_; }

  // Slots per shard (L * E) and in the whole grid (R * L * E).
  uint64_t shard_slots() const { return lumis_ * events_; }
  uint64_t total_slots() const { return runs_ * lumis_ * events_; }
  // Bytes of one shard's index region.
  uint64_t index_bytes() const { return shard_slots() * record_size_; }

  // True when every slot is inside its extent.
  bool Contains(const Slots& s) const {
    return s.run < runs_ && s.lumi < lumis_ && s.event < events_;
  }
  // Mixed-radix composition; the slots must be in range (Contains).
  uint64_t Compose(const Slots& s) const { return (s.run * lumis_ + s.lumi) * events_ + s.event; }
  // Inverse of Compose for entry < total_slots().
  Slots Decompose(uint64_t entry) const {
    return {entry / (lumis_ * events_), (entry / events_) % lumis_, entry % events_};
  }
  // Byte offset of the record of (lumi slot, event slot) inside its shard.
  uint64_t RecordOffset(uint64_t lumi, uint64_t event) const {
    return index_offset_ + (lumi * events_ + event) * record_size_;
  }
  // The slots of the record at a shard byte offset (inverse of RecordOffset); the offset must
  // be a record boundary inside the index region.
  Slots FromRecordOffset(uint64_t run, uint64_t offset) const {
    uint64_t k = (offset - index_offset_) / record_size_;
    return {run, k / events_, k % events_};
  }

 private:
  uint64_t runs_ = 1;
  uint64_t lumis_ = 1;
  uint64_t events_ = 1;
  uint32_t record_size_ = 8;
  uint64_t index_offset_ = 0;
};

}  // namespace ferry::store
