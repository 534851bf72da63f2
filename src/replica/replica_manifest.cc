#include "replica/replica_manifest.h"

#include <algorithm>
#include <cstring>

#include "base/byte_io.h"
#include "base/crc32c.h"

namespace ferry::replica {
namespace {

constexpr char kMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'R', 'P', 'M'};
constexpr char kTrailer[4] = {'R', 'P', 'M', '1'};
constexpr size_t kGenerationAt = 40;
constexpr size_t kFlagsAt = 136;
constexpr size_t kSaltAt = 144;
constexpr size_t kHeaderCrcAt = 156;
constexpr size_t kUrlAt = kReplicaHeaderBytes;
// Header flags: the sections after the URL and the extents are sealed (replica_seal.h).
constexpr uint32_t kSealedFlag = 1;
static_assert(kSaltAt + kReplicaSaltBytes == kHeaderCrcAt);
// A sealed manifest's trailer: the blob's GCM tag, CRC32C, magic.
constexpr size_t kTagBytes = cache::kTagBytes;
constexpr size_t kExtentBytes = 48;
// The extent's u16 unit field: the kind in the low byte, this bit for a unit kept as stored.
constexpr uint16_t kAsStoredBit = 0x100;
constexpr size_t kRateBytes = 24;
constexpr uint32_t kMaxString = 65536;

void Pad8(ByteWriter& w) {
  while (w.size() % 8 != 0) {
    w.U8(0);
  }
}

// Skips the padding to the next multiple of 8 (of the file offset, as Pad8 writes it).
void SkipPad(ByteReader& r) {
  r.Take((8 - r.pos() % 8) % 8);
}

void PutBlob(ByteWriter& w, std::span<const uint8_t> bytes) {
  w.U32(static_cast<uint32_t>(bytes.size()));
  w.Bytes(bytes);
  Pad8(w);
}

std::span<const uint8_t> AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Result<std::string> TakeString(ByteReader& r, const char* what) {
  const uint32_t n = r.U32();
  if (!r.ok() || n > kMaxString || n > r.remaining()) {
    return CorruptionError(std::string("replica manifest: bad ") + what + " length");
  }
  auto b = r.Take(n);
  SkipPad(r);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

Error Bad(const std::string& what) {
  return CorruptionError("replica manifest: " + what);
}

// The counts of the manifest's tables, from its header.
struct TableCounts {
  uint32_t patches = 0;
  uint32_t records = 0;
  uint32_t extents = 0;
  uint32_t trees = 0;
  uint32_t branches = 0;
  uint32_t rates = 0;
};

// Magic, trailer and both checksums, before any field is believed.
Status CheckFraming(std::span<const uint8_t> bytes) {
  if (bytes.size() < kReplicaHeaderBytes + 16 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return Bad("magic missing or file truncated");
  }
  if (std::memcmp(bytes.data() + bytes.size() - 4, kTrailer, 4) != 0) {
    return Bad("trailer missing (truncated?)");
  }
  if (LoadLE<uint32_t>(bytes.data() + kHeaderCrcAt) != crc32c::Value(bytes.data(), kHeaderCrcAt)) {
    return Bad("header checksum mismatch");
  }
  if (LoadLE<uint32_t>(bytes.data() + bytes.size() - 8)
      != crc32c::Value(bytes.data(), bytes.size() - 8)) {
    return Bad("checksum mismatch");
  }
  return OkStatus();
}

// The fixed header (after the magic) and the URL into m; r is left at the first table.
Result<TableCounts> DecodeHeader(ByteReader& r, ReplicaManifest& m) {
  if (r.U32() != kReplicaVersion) {
    return UnsupportedError("replica manifest version is not 1");
  }
  if (r.U32() != kReplicaHeaderBytes) {
    return Bad("header size");
  }
  m.epoch = r.U64();
  m.origin_size = r.U64();
  m.origin_mtime = r.I64();
  m.generation = r.U64();
  m.virtual_size = r.U64();
  m.baskets_begin = r.U64();
  m.data_bytes = r.U64();
  m.created_unix = r.I64();
  m.setting.algorithm = static_cast<codec::Algorithm>(r.U8());
  m.setting.level = r.U8();
  r.U16();
  m.zstd_version = r.U32();
  m.original_bytes = r.U64();
  m.build_cpu_ns = r.U64();
  TableCounts n;
  n.patches = r.U32();
  n.records = r.U32();
  n.extents = r.U32();
  n.trees = r.U32();
  n.branches = r.U32();
  n.rates = r.U32();
  m.missing_baskets = r.U64();
  const uint32_t flags = r.U32();
  if ((flags & ~kSealedFlag) != 0) {
    return Bad("unknown flags");
  }
  m.sealed = (flags & kSealedFlag) != 0;
  m.lz4_version = r.U32();
  auto salt = r.Take(kReplicaSaltBytes);
  if (r.ok()) {
    std::copy(salt.begin(), salt.end(), m.salt.begin());
  }
  r.Take(kReplicaHeaderBytes - r.pos());
  m.url = FERRY_TRY(TakeString(r, "url"));
  // Each count must be backed by the bytes left (every entry takes at least 8 of them).
  for (uint32_t c : {n.patches, n.records, n.extents, n.trees, n.branches, n.rates}) {
    if (c > r.remaining() / 8) {
      return Bad("impossible count");
    }
  }
  return n;
}

// The bytes of a patch or record: a 4-byte length, 4 reserved, the bytes, padding to 8.
Result<std::vector<uint8_t>> TakeSizedBytes(ByteReader& r, const char* what) {
  const uint32_t n = r.U32();
  r.U32();
  if (!r.ok() || n > r.remaining()) {
    return Bad(std::string(what) + " truncated");
  }
  auto b = r.Take(n);
  SkipPad(r);
  return std::vector<uint8_t>(b.begin(), b.end());
}

Status DecodeOverlay(ByteReader& r, const TableCounts& n, ReplicaManifest& m) {
  for (uint32_t i = 0; i < n.patches; ++i) {
    ReplicaPatch p;
    p.offset = r.U64();
    p.bytes = FERRY_TRY(TakeSizedBytes(r, "patch"));
    m.patches.push_back(std::move(p));
  }
  for (uint32_t i = 0; i < n.records; ++i) {
    ReplicaRecord rec;
    rec.offset = r.U64();
    rec.slot_bytes = r.U64();
    rec.bytes = FERRY_TRY(TakeSizedBytes(r, "record"));
    m.records.push_back(std::move(rec));
  }
  return OkStatus();
}

Status DecodeExtents(ByteReader& r, uint32_t count, ReplicaManifest& m) {
  if (count > r.remaining() / kExtentBytes) {
    return Bad("extent table truncated");
  }
  m.extents.resize(count);
  for (ReplicaExtent& e : m.extents) {
    e.offset = r.U64();
    e.bytes = r.U32();
    e.crc = r.U32();
    e.original_offset = r.U64();
    e.original_bytes = r.U32();
    e.tree = r.U32();
    e.branch = r.U32();
    e.basket = r.U32();
    e.setting.algorithm = static_cast<codec::Algorithm>(r.U8());
    e.setting.level = r.U8();
    const uint16_t unit = r.U16();
    e.unit = static_cast<ReplicaExtent::Unit>(unit & ~kAsStoredBit);
    e.as_stored = (unit & kAsStoredBit) != 0;
    e.raw_bytes = r.U32();
  }
  return OkStatus();
}

Status DecodeNames(ByteReader& r, const TableCounts& n, ReplicaManifest& m) {
  for (uint32_t i = 0; i < n.trees; ++i) {
    m.trees.push_back(FERRY_TRY(TakeString(r, "tree")));
  }
  for (uint32_t i = 0; i < n.branches; ++i) {
    ReplicaBranch b;
    b.tree = r.U32();
    b.name = FERRY_TRY(TakeString(r, "branch"));
    m.branches.push_back(std::move(b));
  }
  return OkStatus();
}

Status DecodeRates(ByteReader& r, uint32_t count, ReplicaManifest& m) {
  if (count > r.remaining() / kRateBytes) {
    return Bad("rate table truncated");
  }
  for (uint32_t i = 0; i < count; ++i) {
    CodecRate c;
    c.setting.algorithm = static_cast<codec::Algorithm>(r.U8());
    c.setting.level = r.U8();
    r.U16();
    r.U32();
    c.decode_bytes_per_s = r.U64();
    c.compressed_per_mib = r.U64();
    m.rates.push_back(c);
  }
  return OkStatus();
}

// A sealed manifest's extent tags, after its rates.
Status DecodeTags(ByteReader& r, ReplicaManifest& m) {
  if (m.extents.size() > r.remaining() / kTagBytes) {
    return Bad("tag table truncated");
  }
  for (ReplicaExtent& e : m.extents) {
    auto t = r.Take(kTagBytes);
    std::copy(t.begin(), t.end(), e.tag.begin());
  }
  return OkStatus();
}

// Where a manifest's sealed blob begins: after the URL's section.
Result<size_t> BlobBegin(std::span<const uint8_t> bytes) {
  const auto url_bytes = LoadLE<uint32_t>(bytes.data() + kUrlAt);
  const size_t begin = kUrlAt + (4 + static_cast<size_t>(url_bytes) + 7) / 8 * 8;
  if (url_bytes > kMaxString || begin + kTagBytes + 8 > bytes.size()) {
    return Bad("bad url length");
  }
  return begin;
}

// A sealed manifest's bytes (framing checked) with its blob opened in place, its tag and
// trailer cut off; kCorruption when the blob does not authenticate.
Result<std::vector<uint8_t>> OpenSealed(std::span<const uint8_t> bytes,
                                        const cache::PageSealer& entry) {
  const size_t begin = FERRY_TRY(BlobBegin(bytes));
  const size_t end = bytes.size() - 8 - kTagBytes;
  ReplicaSalt salt{};
  std::copy_n(bytes.data() + kSaltAt, salt.size(), salt.begin());
  const auto generation = LoadLE<uint64_t>(bytes.data() + kGenerationAt);
  SealTag tag{};
  std::copy_n(bytes.data() + end, tag.size(), tag.begin());
  std::vector<uint8_t> opened(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(end));
  auto sealer = ReplicaSealer::Make(entry, salt, generation);
  if (!sealer->OpenManifest({opened.data(), begin}, {opened.data() + begin, end - begin}, tag)) {
    return Bad("sealed sections do not authenticate (another entry's, or damaged)");
  }
  return opened;
}

void EncodeHeader(const ReplicaManifest& m, ByteWriter& w) {
  w.Bytes({reinterpret_cast<const uint8_t*>(kMagic), 8});
  w.U32(kReplicaVersion);
  w.U32(kReplicaHeaderBytes);
  w.U64(m.epoch);
  w.U64(m.origin_size);
  w.I64(m.origin_mtime);
  w.U64(m.generation);
  w.U64(m.virtual_size);
  w.U64(m.baskets_begin);
  w.U64(m.data_bytes);
  w.I64(m.created_unix);
  w.U8(static_cast<uint8_t>(m.setting.algorithm));
  w.U8(static_cast<uint8_t>(m.setting.level));
  w.U16(0);
  w.U32(m.zstd_version);
  w.U64(m.original_bytes);
  w.U64(m.build_cpu_ns);
  w.U32(static_cast<uint32_t>(m.patches.size()));
  w.U32(static_cast<uint32_t>(m.records.size()));
  w.U32(static_cast<uint32_t>(m.extents.size()));
  w.U32(static_cast<uint32_t>(m.trees.size()));
  w.U32(static_cast<uint32_t>(m.branches.size()));
  w.U32(static_cast<uint32_t>(m.rates.size()));
  w.U64(m.missing_baskets);
  w.U32(m.sealed ? kSealedFlag : 0);
  w.U32(m.lz4_version);
  if (m.sealed) {
    w.Bytes(m.salt);
  }
  while (w.size() < kHeaderCrcAt) {
    w.U8(0);
  }
  w.U32(crc32c::Value(w.bytes().data(), kHeaderCrcAt));
}

void EncodeOverlay(const ReplicaManifest& m, ByteWriter& w) {
  for (const ReplicaPatch& p : m.patches) {
    w.U64(p.offset);
    w.U32(static_cast<uint32_t>(p.bytes.size()));
    w.U32(0);
    w.Bytes(p.bytes);
    Pad8(w);
  }
  for (const ReplicaRecord& r : m.records) {
    w.U64(r.offset);
    w.U64(r.slot_bytes);
    w.U32(static_cast<uint32_t>(r.bytes.size()));
    w.U32(0);
    w.Bytes(r.bytes);
    Pad8(w);
  }
}

void EncodeExtents(const ReplicaManifest& m, ByteWriter& w) {
  for (const ReplicaExtent& e : m.extents) {
    w.U64(e.offset);
    w.U32(e.bytes);
    w.U32(m.sealed ? 0 : e.crc);  // a sealed extent's check is its tag
    w.U64(e.original_offset);
    w.U32(e.original_bytes);
    w.U32(e.tree);
    w.U32(e.branch);
    w.U32(e.basket);
    w.U8(static_cast<uint8_t>(e.setting.algorithm));
    w.U8(static_cast<uint8_t>(e.setting.level));
    w.U16(static_cast<uint16_t>(static_cast<uint16_t>(e.unit) | (e.as_stored ? kAsStoredBit : 0)));
    w.U32(e.raw_bytes);
  }
}

void EncodeNamesAndRates(const ReplicaManifest& m, ByteWriter& w) {
  for (const std::string& t : m.trees) {
    PutBlob(w, AsBytes(t));
  }
  for (const ReplicaBranch& b : m.branches) {
    w.U32(b.tree);
    PutBlob(w, AsBytes(b.name));
  }
  for (const CodecRate& r : m.rates) {
    w.U8(static_cast<uint8_t>(r.setting.algorithm));
    w.U8(static_cast<uint8_t>(r.setting.level));
    w.U16(0);
    w.U32(0);
    w.U64(r.decode_bytes_per_s);
    w.U64(r.compressed_per_mib);
  }
}

}  // namespace

void ReplicaManifest::Encode(std::vector<uint8_t>& out, const ReplicaSealer* sealer) const {
  ByteWriter w;
  EncodeHeader(*this, w);
  PutBlob(w, AsBytes(url));
  const size_t blob = w.size();
  EncodeOverlay(*this, w);
  EncodeExtents(*this, w);
  EncodeNamesAndRates(*this, w);
  if (sealed) {
    for (const ReplicaExtent& e : extents) {
      w.Bytes(e.tag);
    }
    std::vector<uint8_t>& b = w.bytes();
    const SealTag tag = sealer->SealManifest({b.data(), blob}, {b.data() + blob, b.size() - blob});
    w.Bytes(tag);
  }
  w.U32(crc32c::Value(w.bytes().data(), w.size()));
  w.Bytes({reinterpret_cast<const uint8_t*>(kTrailer), 4});
  out = std::move(w.bytes());
}

Result<ReplicaManifest> ReplicaManifest::Decode(std::span<const uint8_t> bytes,
                                                const cache::PageSealer* entry) {
  FERRY_TRY(CheckFraming(bytes));
  const bool sealed = (LoadLE<uint32_t>(bytes.data() + kFlagsAt) & kSealedFlag) != 0;
  if (sealed && entry == nullptr) {
    return Error(ErrorCode::kPermission,
                 "replica manifest is sealed (an encrypted entry's): it opens only with the "
                 "cache's master key (cache_key_file)");
  }
  if (!sealed && entry != nullptr) {
    // An encrypted entry's replica is always sealed: a plain one was put there.
    return Bad("not sealed, but its entry is encrypted");
  }
  std::vector<uint8_t> opened;
  std::span<const uint8_t> body = bytes.first(bytes.size() - 8);
  if (sealed) {
    opened = FERRY_TRY(OpenSealed(bytes, *entry));
    body = opened;
  }
  ByteReader r(body);
  r.Take(8);
  ReplicaManifest m;
  const TableCounts n = FERRY_TRY(DecodeHeader(r, m));
  FERRY_TRY(DecodeOverlay(r, n, m));
  FERRY_TRY(DecodeExtents(r, n.extents, m));
  FERRY_TRY(DecodeNames(r, n, m));
  FERRY_TRY(DecodeRates(r, n.rates, m));
  if (sealed) {
    FERRY_TRY(DecodeTags(r, m));
  }
  if (!r.ok() || r.remaining() != 0) {
    return Bad("size does not match its counts");
  }
  FERRY_TRY(m.Validate());
  return m;
}

Status ReplicaManifest::Validate() const {
  switch (setting.algorithm) {
    case codec::Algorithm::kNone:
    case codec::Algorithm::kZlib:
    case codec::Algorithm::kLzma:
    case codec::Algorithm::kLz4:
    case codec::Algorithm::kZstd:
      break;
    default:
      return Bad("unknown codec");
  }
  if (url.empty() || url.size() > kMaxString) {
    return Bad("url");
  }
  uint64_t at = 0;
  for (const ReplicaPatch& p : patches) {
    if (p.offset < at || p.bytes.empty() || p.bytes.size() > origin_size - p.offset
        || p.offset >= origin_size) {
      return Bad("patches out of order or outside the original file");
    }
    at = p.offset + p.bytes.size();
  }
  if (baskets_begin < origin_size || virtual_size < baskets_begin) {
    return Bad("regions out of order");
  }
  at = origin_size;
  for (const ReplicaRecord& rec : records) {
    if (rec.offset < at || rec.bytes.size() > rec.slot_bytes
        || rec.slot_bytes > baskets_begin - rec.offset || rec.offset > baskets_begin) {
      return Bad("tree records out of order or outside their region");
    }
    at = rec.offset + rec.slot_bytes;
  }
  at = baskets_begin;
  for (const ReplicaExtent& e : extents) {
    if (e.offset != at || e.bytes == 0 || e.tree >= trees.size()) {
      return Bad("extents not contiguous");
    }
    // A unit kept as stored has the original's codec, any that ROOT writes.
    const bool known = e.as_stored ? e.setting.algorithm <= codec::Algorithm::kZstd
                                   : e.setting.algorithm == codec::Algorithm::kNone
                                         || e.setting.algorithm == codec::Algorithm::kLz4
                                         || e.setting.algorithm == codec::Algorithm::kZstd;
    if (!known) {
      return Bad("extent with an unknown encoding");
    }
    if (e.unit != ReplicaExtent::Unit::kBasket && e.unit != ReplicaExtent::Unit::kPage
        && e.unit != ReplicaExtent::Unit::kPageWithChecksum) {
      return Bad("extent of an unknown kind");
    }
    at += e.bytes;
  }
  if (at - baskets_begin != data_bytes || at != virtual_size) {
    return Bad("extents do not add up to the data file");
  }
  for (const ReplicaBranch& b : branches) {
    if (b.tree >= trees.size()) {
      return Bad("branch of an unknown tree");
    }
  }
  return OkStatus();
}

bool ReplicaManifest::LibrariesMatch() const {
  return zstd_version == codec::LibraryVersion(codec::Algorithm::kZstd)
         && lz4_version == codec::LibraryVersion(codec::Algorithm::kLz4);
}

void ReplicaManifest::SetLibraries() {
  zstd_version = codec::LibraryVersion(codec::Algorithm::kZstd);
  lz4_version = codec::LibraryVersion(codec::Algorithm::kLz4);
}

int ReplicaManifest::Stage() const {
  return std::any_of(extents.begin(), extents.end(),
                     [](const ReplicaExtent& e) { return e.as_stored; })
             ? 1
             : 2;
}

long ReplicaManifest::ExtentAt(uint64_t offset) const {
  auto it = std::upper_bound(extents.begin(), extents.end(), offset,
                             [](uint64_t off, const ReplicaExtent& e) { return off < e.offset; });
  if (it == extents.begin()) {
    return -1;
  }
  --it;
  return offset < it->end() ? static_cast<long>(it - extents.begin()) : -1;
}

}  // namespace ferry::replica
