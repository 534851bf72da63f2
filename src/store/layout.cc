#include "store/layout.h"

#include <string>

namespace ferry::store {
namespace {

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

}  // namespace

Result<Layout> Layout::Make(
    uint64_t runs, uint64_t lumis, uint64_t events, uint32_t record_size, uint64_t index_offset) {
  if (runs == 0 || lumis == 0 || events == 0 || record_size == 0) {
    return CorruptionError("layout has a zero extent (runs " + std::to_string(runs) + ", lumis "
                           + std::to_string(lumis) + ", events " + std::to_string(events)
                           + ", record size " + std::to_string(record_size) + ")");
  }
  uint64_t shard = 0;
  uint64_t total = 0;
  uint64_t bytes = 0;
  uint64_t end = 0;
  if (MulOverflows(lumis, events, &shard) || MulOverflows(shard, runs, &total)
      || MulOverflows(shard, record_size, &bytes)
      || __builtin_add_overflow(bytes, index_offset, &end)
      || end > static_cast<uint64_t>(INT64_MAX)) {
    return CorruptionError("layout overflows 64 bits: " + std::to_string(runs) + " x "
                           + std::to_string(lumis) + " x " + std::to_string(events) + " slots of "
                           + std::to_string(record_size) + " bytes");
  }
  Layout l;
  l.runs_ = runs;
  l.lumis_ = lumis;
  l.events_ = events;
  l.record_size_ = record_size;
  l.index_offset_ = index_offset;
  return l;
}

}  // namespace ferry::store
