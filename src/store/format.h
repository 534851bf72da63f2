// On-disk structures of the event store, version 2 (docs/format/store.md): the manifest, the
// shard header, lumi-table entries, directory entries, index-record headers and C-block
// headers. Serialize* produce the exact bytes; Parse* validate magic, version, checksums and
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
constexpr uint32_t kFormatVersion = 2;
constexpr uint32_t kOldestFormatVersion = 1;
// Version 2 adds J chunks: after the fixed columns, the S directory has one column per jagged
// column, whose chunk of S block b holds that column's values of the block's events (a scan
// of a collection reads them instead of the C blocks). Version 1 stores are still read.
inline bool HasJChunks(uint32_t version) {
  return version >= 2;
}
// Columns of a shard's S directory: the fixed ones, and in version 2 the jagged ones after.
inline size_t SDirectoryColumns(const Schema& schema, uint32_t version) {
  return schema.fixed.size() + (HasJChunks(version) ? schema.jagged.size() : 0);
}
constexpr uint32_t kShardHeaderSize = 4096;
constexpr uint32_t kManifestFlagNoLumi = 1;
constexpr uint32_t kRecordPresent = 1;
constexpr const char* kManifestName = "MANIFEST";

// Shard file name of a run: "run-<RUN>.shard".
std::string ShardFileName(uint64_t run);

struct RunEntry {
  uint64_t run = 0;
  uint64_t events = 0;
  uint64_t lumis = 0;
  uint64_t shard_bytes = 0;
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
  uint64_t schema_hash = 0;    // XXH3 of the serialized schema (set by Serialize / Parse)
  std::vector<RunEntry> runs;  // ascending run numbers
  std::vector<InputEntry> inputs;

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

}  // namespace ferry::store
