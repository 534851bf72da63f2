// Fuzz target: the replica tier's parsers of bytes from disk (docs/format/replica.md) — the
// manifest (KEY.rpm) and the access trace (KEY.acc). The first input byte picks the parser.
// A decoded manifest must validate, re-encode to bytes that decode to the same manifest, and
// answer extent lookups in bounds; a decoded trace must re-encode to a prefix of its input.
#include <cstdint>
#include <span>
#include <vector>

#include "replica/access_trace.h"
#include "replica/replica_manifest.h"

using ferry::replica::DecodeTrace;
using ferry::replica::EncodeTraceRecord;
using ferry::replica::ReplicaManifest;

namespace {

void Manifest(std::span<const uint8_t> bytes) {
  auto m = ReplicaManifest::Decode(bytes);
  if (!m.has_value()) {
    return;
  }
  if (!m->Validate().has_value()) {
    __builtin_trap();
  }
  for (uint64_t off : {m->origin_size, m->baskets_begin, m->virtual_size - 1, m->virtual_size}) {
    const long e = m->ExtentAt(off);
    if (e >= 0
        && (static_cast<size_t>(e) >= m->extents.size()
            || off < m->extents[static_cast<size_t>(e)].offset
            || off >= m->extents[static_cast<size_t>(e)].end())) {
      __builtin_trap();
    }
  }
  std::vector<uint8_t> again;
  m->Encode(again);
  auto back = ReplicaManifest::Decode(again);
  if (!back.has_value() || back->extents.size() != m->extents.size()
      || back->patches.size() != m->patches.size() || back->url != m->url
      || back->virtual_size != m->virtual_size) {
    __builtin_trap();
  }
}

void Trace(std::span<const uint8_t> bytes) {
  size_t valid = 0;
  auto records = DecodeTrace(bytes, &valid);
  if (valid > bytes.size()) {
    __builtin_trap();
  }
  std::vector<uint8_t> again;
  for (const auto& r : records) {
    EncodeTraceRecord(r.generation, r.ranges, again);
  }
  // Records that decoded hold no empty range, so they re-encode to exactly what was read.
  if (again.size() != valid || !std::equal(again.begin(), again.end(), bytes.begin())) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::span<const uint8_t> rest(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    Manifest(rest);
  } else {
    Trace(rest);
  }
  return 0;
}
