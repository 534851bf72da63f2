#include "store/format.h"

#include <algorithm>
#include <cstring>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/hash.h"

namespace ferry::store {
namespace {

constexpr size_t kHeaderCrcAt = 192;
constexpr uint32_t kMaxBlockLog2 = 24;

Status CheckMagicVersion(std::span<const uint8_t> bytes,
                         const char (&magic)[8],
                         uint32_t version,
                         const char* what) {
  if (bytes.size() < 12 || std::memcmp(bytes.data(), magic, 8) != 0) {
    return CorruptionError(std::string(what) + ": bad magic (not a ferry event store)");
  }
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    Error e(version > kFormatVersion ? ErrorCode::kUnsupported : ErrorCode::kCorruption,
            std::string(what) + ": format version " + std::to_string(version)
                + ", this ferry reads versions " + std::to_string(kOldestFormatVersion) + " to "
                + std::to_string(kFormatVersion));
    return e;
  }
  return OkStatus();
}

}  // namespace

std::string ShardFileName(uint64_t run, uint32_t generation) {
  if (generation == 0) {
    return "run-" + std::to_string(run) + ".shard";
  }
  return "run-" + std::to_string(run) + ".g" + std::to_string(generation) + ".shard";
}

std::string CopyEntry::file_name() const {
  return "run-" + std::to_string(run) + ".g" + std::to_string(generation) + ".c"
         + std::to_string(id) + ".copy";
}

const CopyEntry* Manifest::FindCopy(uint64_t run, int32_t column) const {
  for (const CopyEntry& c : copies) {
    if (c.run == run && static_cast<int32_t>(c.column) == column) {
      return &c;
    }
  }
  return nullptr;
}

Result<Layout> Manifest::GridLayout() const {
  return Layout::Make(run_extent, lumi_extent, event_extent, schema.record_size, 0);
}

int64_t Manifest::RunSlot(uint64_t run) const {
  auto it = std::lower_bound(runs.begin(), runs.end(), run,
                             [](const RunEntry& e, uint64_t r) { return e.run < r; });
  if (it == runs.end() || it->run != run) {
    return -1;
  }
  return it - runs.begin();
}

namespace {

void SerializeCopies(const Manifest& m, ByteWriter& w) {
  w.U32(m.next_copy_id);
  w.U32(static_cast<uint32_t>(m.copies.size()));
  for (const CopyEntry& c : m.copies) {
    w.U32(c.id);
    w.U32(c.column);
    w.U64(c.run);
    w.U32(c.generation);
    w.U32(0);
    w.U64(c.bytes);
  }
}

}  // namespace

std::vector<uint8_t> Manifest::Serialize() {
  // A store without copies keeps the manifest older readers parse.
  flags = (copies.empty() && next_copy_id <= 1) ? (flags & ~kManifestFlagCopies)
                                                : (flags | kManifestFlagCopies);
  ByteWriter schema_bytes;
  schema.Serialize(schema_bytes);
  schema_hash = hash::Xxh3(schema_bytes.bytes());
  ByteWriter w;
  w.Bytes({reinterpret_cast<const uint8_t*>(kManifestMagic), 8});
  w.U32(version);
  w.U32(flags);
  w.U64(run_extent);
  w.U64(lumi_extent);
  w.U64(event_extent);
  w.U32(schema.record_size);  // the schema's offsets are validated against it in every version
  w.U8(log2_ks);
  w.U8(log2_kc);
  w.U8(static_cast<uint8_t>(codec.algorithm));
  w.U8(static_cast<uint8_t>(codec.level));
  w.U32(block_size);
  w.U64(events);
  w.U64(padding);
  w.Str(tree);
  w.U32(static_cast<uint32_t>(schema_bytes.size()));
  w.Bytes(schema_bytes.bytes());
  w.U32(static_cast<uint32_t>(runs.size()));
  for (const RunEntry& r : runs) {
    w.U64(r.run);
    w.U64(r.events);
    w.U64(r.lumis);
    w.U64(r.shard_bytes);
    if (version >= 3) {
      w.U64(r.lumi_extent);
      w.U64(r.event_extent);
      w.U32(r.generation);
    }
  }
  w.U32(static_cast<uint32_t>(inputs.size()));
  for (const InputEntry& in : inputs) {
    w.Str(in.path);
    w.U64(in.entries);
  }
  if (version >= 3) {
    w.U32(static_cast<uint32_t>(dictionary.size()));
    w.Bytes(dictionary);
  }
  if ((flags & kManifestFlagCopies) != 0) {
    SerializeCopies(*this, w);
  }
  w.U32(crc32c::Value(w.bytes()));
  return std::move(w.bytes());
}

namespace {

// The run table (after the schema): one entry per run in ascending order, each within the
// manifest's extents, the counts adding up to the manifest's events and padding.
Status ParseRunTable(ByteReader& r, const Layout& grid, Manifest* m) {
  const bool v3 = m->version >= 3;
  uint32_t runs = r.U32();
  if (!r.ok() || runs > r.remaining() / (v3 ? 52 : 32) || runs != m->run_extent) {
    return CorruptionError("manifest: run table of " + std::to_string(runs) + " runs, extent "
                           + std::to_string(m->run_extent));
  }
  m->runs.resize(runs);
  uint64_t total = 0;
  uint64_t slots = 0;
  for (size_t i = 0; i < runs; ++i) {
    RunEntry& e = m->runs[i];
    e.run = r.U64();
    e.events = r.U64();
    e.lumis = r.U64();
    e.shard_bytes = r.U64();
    e.lumi_extent = m->lumi_extent;
    e.event_extent = m->event_extent;
    if (v3) {
      e.lumi_extent = r.U64();
      e.event_extent = r.U64();
      e.generation = r.U32();
    }
    // Per-run extents: a run's own grid, within the manifest's maxima.
    auto own = Layout::Make(1, e.lumi_extent, e.event_extent, m->record_size(), 0);
    if (!r.ok() || !own.has_value() || (i > 0 && e.run <= m->runs[i - 1].run)
        || e.lumis > e.lumi_extent || e.lumis == 0 || e.lumi_extent > m->lumi_extent
        || e.event_extent > m->event_extent || e.events > own->shard_slots() || e.events < e.lumis
        || (v3 && e.generation == 0)) {
      return CorruptionError("manifest: run table entry " + std::to_string(i) + " is inconsistent");
    }
    total += e.events;
    slots += own->shard_slots();
  }
  const uint64_t want_padding = v3 ? slots - total : grid.total_slots() - total;
  if (total != m->events || m->padding != want_padding) {
    return CorruptionError("manifest: event counts do not add up");
  }
  return OkStatus();
}

// The input list, and (version 3) the E blocks' dictionary.
Status ParseInputsAndDictionary(ByteReader& r, Manifest* m) {
  uint32_t inputs = r.U32();
  if (!r.ok() || inputs > r.remaining() / 10) {
    return CorruptionError("manifest: truncated input list");
  }
  m->inputs.resize(inputs);
  for (InputEntry& in : m->inputs) {
    in.path = r.Str();
    in.entries = r.U64();
  }
  if (m->version >= 3) {
    const uint32_t n = r.U32();
    if (!r.ok() || n > kMaxDictionaryBytes || n > r.remaining()) {
      return CorruptionError("manifest: bad dictionary size " + std::to_string(n));
    }
    auto d = r.Take(n);
    m->dictionary.assign(d.begin(), d.end());
  }
  return OkStatus();
}

// The column-copy table: ids below next_copy_id and unique, entries sorted by (run, column)
// without duplicates, each a jagged column of a shard the run table names.
Status ParseCopies(ByteReader& r, Manifest* m) {
  m->next_copy_id = r.U32();
  const uint32_t n = r.U32();
  if (!r.ok() || n > r.remaining() / kCopyEntryBytes) {
    return CorruptionError("manifest: truncated copy table");
  }
  m->copies.resize(n);
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < n; ++i) {
    CopyEntry& c = m->copies[i];
    c.id = r.U32();
    c.column = r.U32();
    c.run = r.U64();
    c.generation = r.U32();
    const uint32_t zero = r.U32();
    c.bytes = r.U64();
    const int64_t slot = m->RunSlot(c.run);
    const bool ordered = i == 0 || m->copies[i - 1].run < c.run
                         || (m->copies[i - 1].run == c.run && m->copies[i - 1].column < c.column);
    if (!r.ok() || zero != 0 || c.id == 0 || c.id >= m->next_copy_id || !ordered || slot < 0
        || m->runs[static_cast<size_t>(slot)].generation != c.generation
        || c.column >= m->schema.columns.size() || !m->schema.columns[c.column].jagged()) {
      return CorruptionError("manifest: copy table entry " + std::to_string(i)
                             + " is inconsistent");
    }
    ids.push_back(c.id);
  }
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
    return CorruptionError("manifest: two column copies have the same id");
  }
  return OkStatus();
}

}  // namespace

Result<Manifest> Manifest::Parse(std::span<const uint8_t> bytes) {
  Manifest m;
  ByteReader r(bytes);
  r.Take(8);
  m.version = r.U32();
  FERRY_TRY(CheckMagicVersion(bytes, kManifestMagic, m.version, "manifest"));
  if (bytes.size() < 16
      || LoadLE<uint32_t>(bytes.data() + bytes.size() - 4)
             != crc32c::Value(bytes.first(bytes.size() - 4))) {
    return CorruptionError("manifest: checksum mismatch (truncated or corrupt)");
  }
  m.flags = r.U32();
  m.run_extent = r.U64();
  m.lumi_extent = r.U64();
  m.event_extent = r.U64();
  uint32_t record_size = r.U32();
  m.log2_ks = r.U8();
  m.log2_kc = r.U8();
  auto algorithm = static_cast<codec::Algorithm>(r.U8());
  m.codec.level = r.U8();
  m.block_size = r.U32();
  m.events = r.U64();
  m.padding = r.U64();
  m.tree = r.Str();
  uint32_t schema_size = r.U32();
  std::span<const uint8_t> schema_bytes = r.Take(schema_size);
  if (!r.ok()) {
    return CorruptionError("manifest: truncated header");
  }
  switch (algorithm) {
    case codec::Algorithm::kNone:
    case codec::Algorithm::kZlib:
    case codec::Algorithm::kLzma:
    case codec::Algorithm::kLz4:
    case codec::Algorithm::kZstd:
      m.codec.algorithm = algorithm;
      break;
    default:
      return CorruptionError("manifest: unknown codec "
                             + std::to_string(static_cast<int>(algorithm)));
  }
  if (m.log2_kc > m.log2_ks || m.log2_ks > kMaxBlockLog2) {
    return CorruptionError("manifest: bad block shape (log2 Ks " + std::to_string(m.log2_ks)
                           + ", log2 Kc " + std::to_string(m.log2_kc) + ")");
  }
  ByteReader sr(schema_bytes);
  m.schema = FERRY_TRY_CTX(Schema::Parse(sr, record_size), "manifest");
  m.schema_hash = hash::Xxh3(schema_bytes);
  Layout grid = FERRY_TRY_CTX(m.GridLayout(), "manifest");
  FERRY_TRY(ParseRunTable(r, grid, &m));
  FERRY_TRY(ParseInputsAndDictionary(r, &m));
  if ((m.flags & kManifestFlagCopies) != 0) {
    if (m.version < 3) {
      return CorruptionError("manifest: column copies in a version-" + std::to_string(m.version)
                             + " store");
    }
    FERRY_TRY(ParseCopies(r, &m));
  }
  if (!r.ok() || r.remaining() != 4) {
    return CorruptionError("manifest: bad length");
  }
  return m;
}

std::vector<uint8_t> ShardHeader::Serialize() const {
  ByteWriter w;
  w.Bytes({reinterpret_cast<const uint8_t*>(kShardMagic), 8});
  w.U32(version);
  w.U32(kShardHeaderSize);
  w.U64(run);
  w.U64(run_slot);
  w.U64(schema_hash);
  w.U64(lumi_extent);
  w.U64(event_extent);
  w.U32(record_size);
  w.U8(log2_ks);
  w.U8(log2_kc);
  w.U16(flags);
  w.U64(events);
  w.U64(lumis);
  for (const SectionRef& s : sections) {
    w.U64(s.offset);
    w.U64(s.size);
  }
  w.U32(crc_lumi_table);
  w.U32(crc_event_numbers);
  w.U32(crc_s_directory);
  w.U32(crc_c_table);
  w.U32(crc32c::Value(w.bytes()));
  std::vector<uint8_t> out = std::move(w.bytes());
  out.resize(kShardHeaderSize, 0);
  return out;
}

Result<ShardHeader> ShardHeader::Parse(std::span<const uint8_t> bytes, uint64_t file_size) {
  ShardHeader h;
  ByteReader r(bytes);
  r.Take(8);
  h.version = r.U32();
  FERRY_TRY(CheckMagicVersion(bytes, kShardMagic, h.version, "shard header"));
  if (bytes.size() < kShardHeaderSize || file_size < kShardHeaderSize) {
    return CorruptionError("shard header: truncated (" + std::to_string(file_size) + " bytes)");
  }
  if (LoadLE<uint32_t>(bytes.data() + kHeaderCrcAt) != crc32c::Value(bytes.first(kHeaderCrcAt))) {
    return CorruptionError("shard header: checksum mismatch");
  }
  if (r.U32() != kShardHeaderSize) {
    return CorruptionError("shard header: bad header size");
  }
  h.run = r.U64();
  h.run_slot = r.U64();
  h.schema_hash = r.U64();
  h.lumi_extent = r.U64();
  h.event_extent = r.U64();
  h.record_size = r.U32();
  h.log2_ks = r.U8();
  h.log2_kc = r.U8();
  h.flags = r.U16();
  h.events = r.U64();
  h.lumis = r.U64();
  for (SectionRef& s : h.sections) {
    s.offset = r.U64();
    s.size = r.U64();
    if (s.offset > file_size || s.size > file_size - s.offset
        || (s.size > 0 && s.offset < kShardHeaderSize)) {
      return CorruptionError("shard header: a section lies outside the file ("
                             + std::to_string(file_size) + " bytes; truncated?)");
    }
  }
  h.crc_lumi_table = r.U32();
  h.crc_event_numbers = r.U32();
  h.crc_s_directory = r.U32();
  h.crc_c_table = r.U32();
  Layout layout = FERRY_TRY_CTX(
      Layout::Make(1, h.lumi_extent, h.event_extent, h.record_size, h.sections[kIndex].offset),
      "shard header");
  if (h.log2_kc > h.log2_ks || h.log2_ks > kMaxBlockLog2 || h.lumis == 0 || h.lumis > h.lumi_extent
      || h.events < h.lumis || h.events > layout.shard_slots()) {
    return CorruptionError("shard header: inconsistent counts");
  }
  if (h.sections[kLumiTable].size != h.lumis * kLumiEntryBytes
      || h.sections[kEventNumbers].size != h.events * 8
      || h.sections[kIndex].size != layout.index_bytes()
      || h.sections[kCTable].size != h.c_blocks() * kCTableEntryBytes) {
    return CorruptionError("shard header: section sizes do not match the counts");
  }
  return h;
}

void AppendLumiEntry(std::vector<uint8_t>& out, const LumiEntry& e) {
  size_t at = out.size();
  out.resize(at + kLumiEntryBytes);
  StoreLE<uint64_t>(out.data() + at, e.lumi);
  StoreLE<uint64_t>(out.data() + at + 8, e.first);
  StoreLE<uint32_t>(out.data() + at + 16, e.count);
  StoreLE<uint32_t>(out.data() + at + 20, 0);
}

Result<std::vector<LumiEntry>> ParseLumiTable(std::span<const uint8_t> bytes,
                                              uint64_t events,
                                              uint64_t event_extent) {
  if (bytes.size() % kLumiEntryBytes != 0) {
    return CorruptionError("lumi table: size is not a multiple of its entry");
  }
  std::vector<LumiEntry> out(bytes.size() / kLumiEntryBytes);
  uint64_t next = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = bytes.data() + i * kLumiEntryBytes;
    LumiEntry& e = out[i];
    e.lumi = LoadLE<uint64_t>(p);
    e.first = LoadLE<uint64_t>(p + 8);
    e.count = LoadLE<uint32_t>(p + 16);
    if ((i > 0 && e.lumi <= out[i - 1].lumi) || e.first != next || e.count == 0
        || e.count > event_extent) {
      return CorruptionError("lumi table: entry " + std::to_string(i) + " is inconsistent");
    }
    next += e.count;
  }
  if (next != events) {
    return CorruptionError("lumi table covers " + std::to_string(next) + " events, the shard has "
                           + std::to_string(events));
  }
  return out;
}

ChunkRef ParseChunkRef(std::span<const uint8_t> b) {
  return {LoadLE<uint64_t>(b.data()), LoadLE<uint32_t>(b.data() + 8),
          LoadLE<uint32_t>(b.data() + 12)};
}

CBlockRef ParseCBlockRef(std::span<const uint8_t> b) {
  return {LoadLE<uint64_t>(b.data()), LoadLE<uint32_t>(b.data() + 8),
          LoadLE<uint32_t>(b.data() + 12)};
}

void AppendChunkRef(std::vector<uint8_t>& out, const ChunkRef& r) {
  size_t at = out.size();
  out.resize(at + kSDirEntryBytes);
  StoreLE<uint64_t>(out.data() + at, r.offset);
  StoreLE<uint32_t>(out.data() + at + 8, r.size);
  StoreLE<uint32_t>(out.data() + at + 12, r.crc);
}

void AppendCBlockRef(std::vector<uint8_t>& out, const CBlockRef& r) {
  size_t at = out.size();
  out.resize(at + kCTableEntryBytes);
  StoreLE<uint64_t>(out.data() + at, r.offset);
  StoreLE<uint32_t>(out.data() + at + 8, r.size);
  StoreLE<uint32_t>(out.data() + at + 12, r.events);
}

RecordHeader ReadRecordHeader(std::span<const uint8_t> rec) {
  RecordHeader h;
  h.crc = LoadLE<uint32_t>(rec.data());
  h.flags = LoadLE<uint32_t>(rec.data() + 4);
  h.event = LoadLE<uint64_t>(rec.data() + 8);
  h.ordinal = LoadLE<uint64_t>(rec.data() + 16);
  h.cblock_offset = LoadLE<uint64_t>(rec.data() + 24);
  h.cblock_size = LoadLE<uint32_t>(rec.data() + 32);
  return h;
}

void WriteRecordHeader(std::span<uint8_t> rec, const RecordHeader& h) {
  StoreLE<uint32_t>(rec.data(), h.crc);
  StoreLE<uint32_t>(rec.data() + 4, h.flags);
  StoreLE<uint64_t>(rec.data() + 8, h.event);
  StoreLE<uint64_t>(rec.data() + 16, h.ordinal);
  StoreLE<uint64_t>(rec.data() + 24, h.cblock_offset);
  StoreLE<uint32_t>(rec.data() + 32, h.cblock_size);
  StoreLE<uint32_t>(rec.data() + 36, 0);
}

void SealRecord(std::span<uint8_t> rec) {
  StoreLE<uint32_t>(rec.data(), crc32c::Value(rec.data() + 4, rec.size() - 4));
}

Result<bool> CheckRecord(std::span<const uint8_t> rec) {
  if (rec.size() < kRecordHeaderBytes) {
    return CorruptionError("index record shorter than its header");
  }
  RecordHeader h = ReadRecordHeader(rec);
  if (h.crc == 0 && h.flags == 0) {
    bool zero = std::all_of(rec.begin(), rec.end(), [](uint8_t b) { return b == 0; });
    if (zero) {
      return false;
    }
  }
  if (h.crc != crc32c::Value(rec.data() + 4, rec.size() - 4) || (h.flags & kRecordPresent) == 0) {
    return CorruptionError("index record checksum mismatch");
  }
  return true;
}

Result<CBlockHeader> ParseCBlockHeader(std::span<const uint8_t> bytes,
                                       uint32_t block_size,
                                       const Schema& schema,
                                       bool verify_crc) {
  const size_t header = CBlockHeaderBytes(schema.groups(), schema.jagged.size());
  if (block_size < header || bytes.size() < header) {
    return CorruptionError("collection block of " + std::to_string(block_size)
                           + " bytes is shorter than its header");
  }
  if (verify_crc) {
    if (bytes.size() != block_size
        || LoadLE<uint32_t>(bytes.data()) != crc32c::Value(bytes.data() + 4, bytes.size() - 4)) {
      return CorruptionError("collection block checksum mismatch");
    }
  }
  CBlockHeader h;
  h.header_bytes = header;
  h.events = LoadLE<uint32_t>(bytes.data() + 4);
  h.group_elements.resize(schema.groups());
  h.chunk_sizes.resize(schema.jagged.size());
  const uint8_t* p = bytes.data() + 8;
  for (uint32_t& g : h.group_elements) {
    g = LoadLE<uint32_t>(p);
    p += 4;
  }
  uint64_t total = header;
  for (uint32_t& c : h.chunk_sizes) {
    c = LoadLE<uint32_t>(p);
    p += 4;
    total += c;
  }
  if (total != block_size) {
    return CorruptionError("collection block chunks add up to " + std::to_string(total)
                           + " bytes, the block has " + std::to_string(block_size));
  }
  return h;
}

}  // namespace ferry::store

namespace ferry::store {

void WriteRecordV3(std::span<uint8_t> out, RecordV3 rec) {
  StoreLE<uint32_t>(out.data() + 4, rec.block_size);
  StoreLE<uint64_t>(out.data() + 8, rec.block_offset);
  StoreLE<uint32_t>(out.data() + 16, rec.ordinal);
  StoreLE<uint32_t>(out.data() + 20, rec.event_low);
  StoreLE<uint32_t>(out.data(), crc32c::Value(out.data() + 4, kRecordV3Bytes - 4));
}

Result<bool> ParseRecordV3(std::span<const uint8_t> bytes, RecordV3* out) {
  if (bytes.size() < kRecordV3Bytes) {
    return CorruptionError("index record shorter than " + std::to_string(kRecordV3Bytes)
                           + " bytes");
  }
  const uint8_t* p = bytes.data();
  out->crc = LoadLE<uint32_t>(p);
  out->block_size = LoadLE<uint32_t>(p + 4);
  out->block_offset = LoadLE<uint64_t>(p + 8);
  out->ordinal = LoadLE<uint32_t>(p + 16);
  out->event_low = LoadLE<uint32_t>(p + 20);
  // A present record always names a non-empty block, so all-zero can only be padding.
  if (out->block_size == 0 && out->block_offset == 0 && out->crc == 0 && out->ordinal == 0
      && out->event_low == 0) {
    return false;
  }
  if (out->crc != crc32c::Value(p + 4, kRecordV3Bytes - 4) || out->block_size == 0) {
    return CorruptionError("index record checksum mismatch");
  }
  return true;
}

Result<EBlockHeader> ParseEBlockHeader(std::span<const uint8_t> bytes, bool verify_crc) {
  if (bytes.size() < kEBlockHeaderBytes) {
    return CorruptionError("E block of " + std::to_string(bytes.size())
                           + " bytes is shorter than its header");
  }
  EBlockHeader h;
  h.crc = LoadLE<uint32_t>(bytes.data());
  h.events = LoadLE<uint32_t>(bytes.data() + 4);
  h.raw_size = LoadLE<uint32_t>(bytes.data() + 8);
  h.flags = LoadLE<uint32_t>(bytes.data() + 12);
  if (verify_crc && h.crc != crc32c::Value(bytes.data() + 4, bytes.size() - 4)) {
    return CorruptionError("E block checksum mismatch");
  }
  const uint64_t stored = bytes.size() - kEBlockHeaderBytes;
  if (h.events == 0 || (h.flags & ~kEBlockFlagDictionary) != 0 || stored > h.raw_size) {
    return CorruptionError("E block header is inconsistent (" + std::to_string(h.events)
                           + " events, " + std::to_string(h.raw_size) + " raw bytes, "
                           + std::to_string(stored) + " stored)");
  }
  return h;
}

Status LayoutEPayload(std::span<const uint8_t> payload,
                      const Schema& schema,
                      uint32_t events,
                      std::vector<uint64_t>* begin,
                      std::vector<uint64_t>* end) {
  const size_t groups = schema.groups();
  if (payload.size() < 4 * groups) {
    return CorruptionError("E block payload shorter than its group totals");
  }
  if (schema.payload_columns.size() != schema.columns.size()) {
    return InvalidArgumentError("E block layout of a schema that was not built or parsed");
  }
  // Elements per group, then per-column byte counts: a walk of 8-byte entries, no branches
  // on the column's kind (a fixed column counts `events` elements, at index 0).
  std::vector<uint64_t> count(groups + 1);
  count[0] = events;
  for (size_t g = 0; g < groups; ++g) {
    count[g + 1] = LoadLE<uint32_t>(payload.data() + 4 * g);
  }
  begin->resize(schema.columns.size());
  end->resize(schema.columns.size());
  uint64_t at = 4 * groups;
  for (size_t c = 0; c < schema.payload_columns.size(); ++c) {
    const Schema::PayloadColumn& pc = schema.payload_columns[c];
    (*begin)[c] = at;
    at += count[pc.count_slot] * pc.element_bytes;  // each < 2^32 * 2^23
    (*end)[c] = at;
    if (at > payload.size()) {  // checked per column, so the sum cannot wrap
      return CorruptionError("E block columns overrun the payload (" + schema.columns[c].name
                             + ")");
    }
  }
  if (at != payload.size()) {
    return CorruptionError("E block columns fill " + std::to_string(at) + " of "
                           + std::to_string(payload.size()) + " payload bytes");
  }
  return OkStatus();
}

}  // namespace ferry::store
