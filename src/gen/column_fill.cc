#include "gen/column_fill.h"

#include <cstring>

namespace ferry::gen {

using rootio::Column;
using rootio::LeafType;

namespace {

// 4-byte values, the most common kind (floats, ints): typed and unaliased, the loop becomes
// AVX2 gathers where the CPU has them.
inline void Gather4Loop(uint32_t* __restrict dst,
                        const uint32_t* __restrict src,
                        const uint32_t* __restrict picks,
                        size_t n) {
  for (size_t e = 0; e < n; ++e) {
    dst[e] = src[picks[e]];
  }
}

__attribute__((target("avx2"))) void Gather4Avx2(uint32_t* dst,
                                                 const uint32_t* src,
                                                 const uint32_t* picks,
                                                 size_t n) {
  Gather4Loop(dst, src, picks, n);
}

void Gather4(uint8_t* dst, const uint8_t* src, std::span<const uint32_t> picks) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  // Column buffers come from operator new and hold whole values: aligned for uint32_t.
  auto* d = reinterpret_cast<uint32_t*>(dst);
  const auto* s = reinterpret_cast<const uint32_t*>(src);
  if (avx2) {
    Gather4Avx2(d, s, picks.data(), picks.size());
  } else {
    Gather4Loop(d, s, picks.data(), picks.size());
  }
}

}  // namespace

void StartColumn(const rootwrite::BranchSpec& spec, int64_t n, Column* out) {
  out->type = spec.type;
  out->first_entry = 0;
  out->num_entries = n;
  out->jagged = !spec.count.empty() || spec.type == LeafType::kString;
  out->fixed_len = out->jagged ? 1 : static_cast<uint32_t>(spec.len);
  if (!out->jagged) {
    out->offsets.clear();
  }
}

void GatherFixed(uint8_t* dst, const uint8_t* src, std::span<const uint32_t> picks, size_t size) {
  switch (size) {  // constant sizes let the compiler turn the copies into plain moves
    case 1:
      for (size_t e = 0; e < picks.size(); ++e) {
        dst[e] = src[picks[e]];
      }
      break;
    case 4:
      Gather4(dst, src, picks);
      break;
    case 8:
      for (size_t e = 0; e < picks.size(); ++e) {
        std::memcpy(dst + 8 * e, src + 8 * size_t{picks[e]}, 8);
      }
      break;
    default:
      for (size_t e = 0; e < picks.size(); ++e) {
        std::memcpy(dst + e * size, src + picks[e] * size, size);
      }
  }
}

void GatherRanges(const Column& src, std::span<const uint32_t> picks, size_t unit, Column* out) {
  std::vector<uint64_t>& offsets = out->offsets.Mutable();
  offsets.resize(picks.size() + 1);
  uint64_t total = 0;
  offsets[0] = 0;
  for (size_t e = 0; e < picks.size(); ++e) {
    total += src.offsets[picks[e] + 1] - src.offsets[picks[e]];
    offsets[e + 1] = total;
  }
  out->bytes.reserve(total * unit + kGatherSlack);
  out->bytes.resize(total * unit);
  uint8_t* dst = out->bytes.data();
  for (size_t e = 0; e < picks.size(); ++e) {
    const uint64_t s = src.offsets[picks[e]];
    const uint64_t len = (out->offsets[e + 1] - out->offsets[e]) * unit;
    GatherCopy(dst + out->offsets[e] * unit, src.bytes.data(), s * unit, len, src.bytes.size());
  }
}

void FillIdColumn(const EventTemplate& tmpl, int32_t b, std::span<const EventId> ids, Column* out) {
  const size_t vs = b == tmpl.event ? 8 : 4;
  out->bytes.resize(ids.size() * vs);
  for (size_t e = 0; e < ids.size(); ++e) {
    const EventId& id = ids[e];
    if (b == tmpl.event) {
      std::memcpy(out->bytes.data() + 8 * e, &id.event, 8);
    } else {
      const uint32_t v = b == tmpl.run ? id.run : id.lumi;
      std::memcpy(out->bytes.data() + 4 * e, &v, 4);
    }
  }
}

}  // namespace ferry::gen
