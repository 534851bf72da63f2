// Fuzz target: a sealed replica manifest (docs/format/replica.md, "Sealed replicas") parsed
// with the fixed data key of entry kEntryKey, as a cache process parses its entry's.
// The first input byte picks the mode:
//   even  the harness seals the rest itself before parsing: the sealed flag set, the blob after
//         the URL encrypted under the replica key of the header's salt and generation, its tag
//         and both CRC32Cs written. The input is then a manifest in the clear (a sealed
//         manifest's plaintext), and the fuzzer reaches every table past authentication.
//   odd   the rest parsed as it is: framing, the order of the checks, and the refusal of what
//         does not authenticate.
// A manifest that decodes must validate, answer extent lookups in bounds, and seal again to
// bytes that decode to a manifest that seals to the same bytes; those bytes must not open
// without a sealer, nor with another entry's, nor with another data key's.
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "base/crc32c.h"
#include "base/endian.h"
#include "cache/page_seal.h"
#include "replica/replica_manifest.h"
#include "replica/replica_seal.h"

using ferry::ErrorCode;
using ferry::cache::KeyBytes;
using ferry::cache::PageSealer;
using ferry::replica::ReplicaManifest;
using ferry::replica::ReplicaSalt;
using ferry::replica::ReplicaSealer;
using ferry::replica::SealTag;

namespace {

// The seeds in fuzz/corpus/replica_sealed were sealed under this entry (see its README).
constexpr uint64_t kEntryKey = 0x5eed5eed5eed5eedULL;
constexpr uint64_t kEpoch = 7;
// Byte offsets of the manifest's layout (replica.md, "Manifest KEY.rpm").
constexpr size_t kGenerationAt = 40;
constexpr size_t kFlagsAt = 136;
constexpr size_t kSaltAt = 144;
constexpr size_t kHeaderCrcAt = 156;
constexpr size_t kUrlAt = 160;
constexpr size_t kTrailerBytes = 8;  // CRC32C, magic
constexpr size_t kTagBytes = ferry::cache::kTagBytes;

KeyBytes Filled(uint8_t v) {
  KeyBytes k{};
  k.fill(v);
  return k;
}

const PageSealer& Entry() {
  static const PageSealer entry(Filled(0x42), kEntryKey, kEpoch);
  return entry;
}

// Seals `m` in place as the builder would have, when its layout leaves room for a blob, a tag
// and the trailer; false otherwise (the input is then parsed as it is).
bool SealInPlace(std::vector<uint8_t>& m) {
  if (m.size() < kUrlAt + 4 + kTagBytes + kTrailerBytes) {
    return false;
  }
  const size_t url_bytes = ferry::LoadLE<uint32_t>(m.data() + kUrlAt);
  const size_t blob = kUrlAt + (4 + url_bytes + 7) / 8 * 8;
  const size_t end = m.size() - kTrailerBytes - kTagBytes;
  if (url_bytes > m.size() || blob > end) {
    return false;
  }
  ferry::StoreLE<uint32_t>(m.data() + kFlagsAt, ferry::LoadLE<uint32_t>(m.data() + kFlagsAt) | 1);
  ferry::StoreLE<uint32_t>(m.data() + kHeaderCrcAt, ferry::crc32c::Value(m.data(), kHeaderCrcAt));
  ReplicaSalt salt{};
  std::memcpy(salt.data(), m.data() + kSaltAt, salt.size());
  const auto sealer =
      ReplicaSealer::Make(Entry(), salt, ferry::LoadLE<uint64_t>(m.data() + kGenerationAt));
  const SealTag tag = sealer->SealManifest({m.data(), blob}, {m.data() + blob, end - blob});
  std::memcpy(m.data() + end, tag.data(), tag.size());
  ferry::StoreLE<uint32_t>(m.data() + m.size() - kTrailerBytes,
                           ferry::crc32c::Value(m.data(), m.size() - kTrailerBytes));
  return true;
}

void Check(bool ok) {
  if (!ok) {
    __builtin_trap();
  }
}

void Parse(std::span<const uint8_t> bytes) {
  auto m = ReplicaManifest::Decode(bytes, &Entry());
  if (!m.has_value()) {
    return;
  }
  Check(m->sealed && m->Validate().has_value());
  for (uint64_t off : {m->origin_size, m->baskets_begin, m->virtual_size - 1, m->virtual_size}) {
    const long e = m->ExtentAt(off);
    Check(e < 0
          || (static_cast<size_t>(e) < m->extents.size()
              && off >= m->extents[static_cast<size_t>(e)].offset
              && off < m->extents[static_cast<size_t>(e)].end()));
  }
  std::vector<uint8_t> again;
  m->Encode(again, m->Sealer(Entry()).get());
  auto back = ReplicaManifest::Decode(again, &Entry());
  Check(back.has_value());
  std::vector<uint8_t> twice;
  back->Encode(twice, back->Sealer(Entry()).get());
  Check(twice == again);
  Check(back->extents.size() == m->extents.size()
        && (m->extents.empty() || back->extents.back().tag == m->extents.back().tag));
  auto keyless = ReplicaManifest::Decode(again);
  Check(!keyless.has_value() && keyless.error().code() == ErrorCode::kPermission);
  const PageSealer other_entry(Filled(0x42), kEntryKey + 1, kEpoch);
  Check(!ReplicaManifest::Decode(again, &other_entry).has_value());
  const PageSealer other_key(Filled(0x43), kEntryKey, kEpoch);
  Check(!ReplicaManifest::Decode(again, &other_key).has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  std::vector<uint8_t> rest(data + 1, data + size);
  if (data[0] % 2 == 0 && !SealInPlace(rest)) {
    return 0;
  }
  Parse(rest);
  return 0;
}
