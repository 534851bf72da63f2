#include "replica/access_trace.h"

#include <algorithm>

#include "base/crc32c.h"
#include "base/endian.h"

namespace ferry::replica {
namespace {

constexpr uint32_t kRecordMagic = 0x31434341;  // "ACC1" little-endian
constexpr size_t kRecordHead = 16;             // magic, count, generation
constexpr size_t kRangeBytes = 16;
constexpr size_t kRecordTail = 8;  // CRC, zero

}  // namespace

void EncodeTraceRecord(uint64_t generation,
                       std::span<const TraceRange> ranges,
                       std::vector<uint8_t>& out) {
  size_t i = 0;
  while (i < ranges.size()) {
    // Count the non-empty ranges this record takes.
    size_t j = i;
    uint32_t n = 0;
    for (; j < ranges.size() && n < kTraceMaxRanges; ++j) {
      n += ranges[j].length != 0 ? 1u : 0u;
    }
    if (n == 0) {
      return;
    }
    const size_t start = out.size();
    out.resize(start + kRecordHead + kRangeBytes * n + kRecordTail);
    uint8_t* p = out.data() + start;
    StoreLE<uint32_t>(p, kRecordMagic);
    StoreLE<uint32_t>(p + 4, n);
    StoreLE<uint64_t>(p + 8, generation);
    uint8_t* r = p + kRecordHead;
    for (size_t k = i; k < j; ++k) {
      if (ranges[k].length == 0) {
        continue;
      }
      StoreLE<uint64_t>(r, ranges[k].offset);
      StoreLE<uint32_t>(r + 8, ranges[k].length);
      StoreLE<uint32_t>(r + 12, 0);
      r += kRangeBytes;
    }
    StoreLE<uint32_t>(r, crc32c::Value(p, static_cast<size_t>(r - p)));
    StoreLE<uint32_t>(r + 4, 0);
    i = j;
  }
}

std::vector<TraceRecord> DecodeTrace(std::span<const uint8_t> bytes, size_t* valid_bytes) {
  std::vector<TraceRecord> out;
  size_t pos = 0;
  while (bytes.size() - pos >= kRecordHead + kRangeBytes + kRecordTail) {
    const uint8_t* p = bytes.data() + pos;
    const auto n = LoadLE<uint32_t>(p + 4);
    if (LoadLE<uint32_t>(p) != kRecordMagic || n == 0 || n > kTraceMaxRanges) {
      break;
    }
    const size_t size = kRecordHead + kRangeBytes * n + kRecordTail;
    if (size > bytes.size() - pos) {
      break;
    }
    const size_t body = size - kRecordTail;
    if (LoadLE<uint32_t>(p + body) != crc32c::Value(p, body)
        || LoadLE<uint32_t>(p + body + 4) != 0) {
      break;
    }
    TraceRecord rec;
    rec.generation = LoadLE<uint64_t>(p + 8);
    rec.ranges.resize(n);
    bool valid = true;
    for (uint32_t k = 0; k < n; ++k) {
      const uint8_t* r = p + kRecordHead + kRangeBytes * k;
      rec.ranges[k] = {LoadLE<uint64_t>(r), LoadLE<uint32_t>(r + 8)};
      // Writers never record an empty range and zero the padding: anything else is not theirs.
      valid = valid && rec.ranges[k].length != 0 && LoadLE<uint32_t>(r + 12) == 0;
    }
    if (!valid) {
      break;
    }
    out.push_back(std::move(rec));
    pos += size;
  }
  if (valid_bytes != nullptr) {
    *valid_bytes = pos;
  }
  return out;
}

}  // namespace ferry::replica
