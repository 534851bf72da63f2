// On-disk structures of the event store, version 3 (docs/format/store.md): the manifest, the
// shard header, lumi-table entries, directory entries, index records (the 40-byte header of
// versions 1-2, the 24-byte locator of version 3), C-block headers (1-2) and E-block headers
// (3). Serialize* produce the exact bytes; Parse* validate magic, version, checksums and
// every bound a reader relies on, returning kCorruption (kUnsupported for a newer version)
// with the structure named. No parser reads outside the span it is given.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "codec/compression.h"
#include "store/layout.h"
#include "store/schema.h"

namespace ferry::store {

constexpr char kManifestMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'E', 'V', 'M'};
constexpr char kShardMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'E', 'V', 'S'};
constexpr uint32_t kFormatVersion = 3;
constexpr uint32_t kOldestFormatVersion = 1;
// Version 2 adds J chunks: after the fixed columns, the S directory has one column per jagged
// column, whose chunk of S block b holds that column's values of the block's events (a scan
// of a collection reads them instead of the C blocks). Version 3 replaces records and C blocks
// by 24-byte locators and E blocks (every column of Kc events, one compressed frame), shuffles
// the bytes of S chunks, and has J chunks only when the store was made with them (shard
// header flag kShardFlagJChunks). Version 1 and 2 stores are still read.
constexpr uint16_t kShardFlagJChunks = 1;
inline bool HasJChunks(uint32_t version, uint16_t shard_flags = 0) {
  return version == 2 || (version >= 3 && (shard_flags & kShardFlagJChunks) != 0);
}
// Columns of a shard's S directory: the fixed ones, and with J chunks the jagged ones after.
inline size_t SDirectoryColumns(const Schema& schema, uint32_t version, uint16_t shard_flags = 0) {
  return schema.fixed.size() + (HasJChunks(version, shard_flags) ? schema.jagged.size() : 0);
}
constexpr uint32_t kShardHeaderSize = 4096;
constexpr uint32_t kManifestFlagNoLumi = 1;
// Version 3: every shard has J chunks (convert --scan-copy).
constexpr uint32_t kManifestFlagJChunks = 2;
// The manifest has a column-copy table after the dictionary (docs/format/store.md section 12).
constexpr uint32_t kManifestFlagCopies = 4;
// Version 3 index record: a fixed 24-byte locator of the event's E block (section 4).
constexpr uint32_t kRecordV3Bytes = 24;
constexpr uint32_t kRecordPresent = 1;
constexpr const char* kManifestName = "MANIFEST";

// Shard file name of a run: "run-<RUN>.shard" (versions 1-2, generation 0) or
// "run-<RUN>.g<GEN>.shard" (version 3: a rebuilt run gets a new name, so a reader that opened
// the previous manifest keeps its files).
std::string ShardFileName(uint64_t run, uint32_t generation = 0);

struct RunEntry {
  uint64_t run = 0;
  uint64_t events = 0;
  uint64_t lumis = 0;
  uint64_t shard_bytes = 0;
  // Version 3: the shard's own extents (its index is lumi_extent x event_extent records) and
  // file generation. Versions 1-2: the manifest's L and E, generation 0.
  uint64_t lumi_extent = 0;
  uint64_t event_extent = 0;
  uint32_t generation = 0;
  std::string file_name() const { return ShardFileName(run, generation); }
};

// A column copy (section 12): one jagged column of one shard, column-major in its own file
// "run-<RUN>.g<GEN>.c<ID>.copy" beside the shard. Serialized as 32 bytes: u32 id, u32 column,
// u64 run, u32 generation, u32 0, u64 file bytes.
constexpr size_t kCopyEntryBytes = 32;
struct CopyEntry {
  uint32_t id = 0;      // unique in the store, never reused (Manifest::next_copy_id)
  uint32_t column = 0;  // schema index of a jagged column
  uint64_t run = 0;     // the shard it copies: run and generation
  uint32_t generation = 0;
  uint64_t bytes = 0;  // size of the copy file
  std::string file_name() const;
};

struct InputEntry {
  std::string path;
  uint64_t entries = 0;
};

struct Manifest {
  uint32_t version = kFormatVersion;
  uint32_t flags = 0;
  uint64_t run_extent = 0;    // R
  uint64_t lumi_extent = 0;   // L
  uint64_t event_extent = 0;  // E
  uint8_t log2_ks = 13;
  uint8_t log2_kc = 4;
  codec::Setting codec;
  uint32_t block_size = 32 * 1024;
  uint64_t events = 0;
  uint64_t padding = 0;
  std::string tree;
  Schema schema;
  uint64_t schema_hash = 0;  // XXH3 of the serialized schema (set by Serialize / Parse)
  // Bytes of one index record: the schema's record size (versions 1-2) or kRecordV3Bytes.
  uint32_t record_size() const { return version >= 3 ? kRecordV3Bytes : schema.record_size; }
  bool j_chunks() const { return version == 2 || (flags & kManifestFlagJChunks) != 0; }
  std::vector<RunEntry> runs;  // ascending run numbers
  std::vector<InputEntry> inputs;
  // Version 3: the zstd dictionary E blocks flagged kEBlockFlagDictionary are compressed with
  // (trained on the first input's blocks at conversion; empty when there is none).
  std::vector<uint8_t> dictionary;
  // Column copies (flag kManifestFlagCopies): sorted by (run, column), at most one per pair,
  // each naming a shard of the run table. next_copy_id is larger than every id ever used.
  std::vector<CopyEntry> copies;
  uint32_t next_copy_id = 1;
  // The copy of (run, column), or nullptr.
  const CopyEntry* FindCopy(uint64_t run, int32_t column) const;

  // Layout of the grid (index_offset of the shards' index regions is per shard; 0 here).
  Result<Layout> GridLayout() const;
  // Run slot of a run number, or -1 (binary search).
  int64_t RunSlot(uint64_t run) const;

  std::vector<uint8_t> Serialize();
  static Result<Manifest> Parse(std::span<const uint8_t> bytes);
};

enum Section : int {
  kLumiTable = 0,
  kEventNumbers,
  kIndex,
  kPayload,
  kSDirectory,
  kCTable,
  kNumSections
};

struct SectionRef {
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct ShardHeader {
  uint32_t version = kFormatVersion;
  uint64_t run = 0;
  uint64_t run_slot = 0;
  uint64_t schema_hash = 0;
  uint64_t lumi_extent = 0;
  uint64_t event_extent = 0;
  uint32_t record_size = 0;
  uint8_t log2_ks = 0;
  uint8_t log2_kc = 0;
  uint16_t flags = 0;  // version 3: kShardFlagJChunks
  uint64_t events = 0;
  uint64_t lumis = 0;
  SectionRef sections[kNumSections];
  uint32_t crc_lumi_table = 0;
  uint32_t crc_event_numbers = 0;
  uint32_t crc_s_directory = 0;
  uint32_t crc_c_table = 0;

  std::vector<uint8_t> Serialize() const;  // kShardHeaderSize bytes
  // Validates magic, version, CRC, and that sections lie inside file_size and have the sizes
  // the counts imply.
  static Result<ShardHeader> Parse(std::span<const uint8_t> bytes, uint64_t file_size);
  uint64_t s_blocks() const { return events == 0 ? 0 : ((events - 1) >> log2_ks) + 1; }
  uint64_t c_blocks() const { return events == 0 ? 0 : ((events - 1) >> log2_kc) + 1; }
  bool j_chunks() const { return HasJChunks(version, flags); }
};

constexpr size_t kLumiEntryBytes = 24;
struct LumiEntry {
  uint64_t lumi = 0;
  uint64_t first = 0;  // index of its first event number in the event-number section
  uint32_t count = 0;
};
// Parses the lumi table: ascending lumis, consecutive non-empty event ranges covering exactly
// `events` numbers, at most `event_extent` events per lumi.
Result<std::vector<LumiEntry>> ParseLumiTable(std::span<const uint8_t> bytes,
                                              uint64_t events,
                                              uint64_t event_extent);
void AppendLumiEntry(std::vector<uint8_t>& out, const LumiEntry& e);

constexpr size_t kSDirEntryBytes = 16;
struct ChunkRef {
  uint64_t offset = 0;
  uint32_t size = 0;
  uint32_t crc = 0;
};
constexpr size_t kCTableEntryBytes = 16;
struct CBlockRef {
  uint64_t offset = 0;
  uint32_t size = 0;
  uint32_t events = 0;
};
ChunkRef ParseChunkRef(std::span<const uint8_t> bytes);  // 16 bytes
CBlockRef ParseCBlockRef(std::span<const uint8_t> bytes);
void AppendChunkRef(std::vector<uint8_t>& out, const ChunkRef& r);
void AppendCBlockRef(std::vector<uint8_t>& out, const CBlockRef& r);

// Index-record header fields (section 4).
struct RecordHeader {
  uint32_t crc = 0;
  uint32_t flags = 0;
  uint64_t event = 0;
  uint64_t ordinal = 0;
  uint64_t cblock_offset = 0;
  uint32_t cblock_size = 0;
};
RecordHeader ReadRecordHeader(std::span<const uint8_t> record);
void WriteRecordHeader(std::span<uint8_t> record, const RecordHeader& h);
// Sets the CRC field over bytes [4, size).
void SealRecord(std::span<uint8_t> record);
// Empty slot (all zero) -> false; present with a good CRC -> true; anything else kCorruption.
Result<bool> CheckRecord(std::span<const uint8_t> record);

// C-block header (section 5): events, per-group element totals, per-jagged-column chunk sizes.
struct CBlockHeader {
  uint32_t events = 0;
  std::vector<uint32_t> group_elements;
  std::vector<uint32_t> chunk_sizes;
  size_t header_bytes = 0;  // where the chunks start
};
inline size_t CBlockHeaderBytes(size_t groups, size_t jagged) {
  return 8 + 4 * groups + 4 * jagged;
}
// Parses the header of a C block of block_size bytes from bytes (the whole block, or at least
// its header). Checks that the chunks fill the block exactly and that the group totals fit
// the chunk sizes. With verify_crc, bytes must be the whole block and its CRC is checked.
Result<CBlockHeader> ParseCBlockHeader(std::span<const uint8_t> bytes,
                                       uint32_t block_size,
                                       const Schema& schema,
                                       bool verify_crc);

// Version 3 index record (kRecordV3Bytes): where the event's E block is and where the event
// sits in it. All zero in a padding slot.
struct RecordV3 {
  uint32_t crc = 0;           // CRC32C of bytes [4, 24)
  uint32_t block_size = 0;    // stored bytes of the E block
  uint64_t block_offset = 0;  // file offset of the E block
  uint32_t ordinal = 0;       // storage ordinal (E block = ordinal >> log2 Kc)
  uint32_t event_low = 0;     // low 32 bits of the event number (checked against the array)
};
// Serializes and seals (sets the CRC).
void WriteRecordV3(std::span<uint8_t> out, RecordV3 r);
// Empty slot (all zero) -> nullopt-like false; present with a good CRC -> true and *out set;
// anything else kCorruption.
Result<bool> ParseRecordV3(std::span<const uint8_t> bytes, RecordV3* out);

// Version 3 E block (section 5): a 16-byte header, then the payload, compressed as one frame
// of the store's codec or raw (stored size == raw size).
constexpr size_t kEBlockHeaderBytes = 16;
constexpr uint32_t kEBlockFlagDictionary = 1;  // compressed with the manifest's dictionary
constexpr uint32_t kMaxDictionaryBytes = 1u << 20;
struct EBlockHeader {
  uint32_t crc = 0;       // CRC32C of bytes [4, block size)
  uint32_t events = 0;    // events in the block (<= Kc)
  uint32_t raw_size = 0;  // payload bytes once decompressed
  uint32_t flags = 0;     // kEBlockFlagDictionary or 0
};
// Raw payload layout: u32 elements per group, then every column in schema order, its values of
// the block's events byte-shuffled (section 5). LayoutEPayload gives each column's place.
// Parses and checks a whole E block (CRC when verify_crc). bytes.size() is the block size.
Result<EBlockHeader> ParseEBlockHeader(std::span<const uint8_t> bytes, bool verify_crc);
// The layout of a decoded payload of `events` events, from the group totals at its start:
// column c (schema order) is payload[(*begin)[c], (*end)[c]). The vectors are resized, their
// capacity reused. kCorruption when the payload is too short for the totals or the columns do
// not add up to payload.size().
Status LayoutEPayload(std::span<const uint8_t> payload,
                      const Schema& schema,
                      uint32_t events,
                      std::vector<uint64_t>* begin,
                      std::vector<uint64_t>* end);

}  // namespace ferry::store
