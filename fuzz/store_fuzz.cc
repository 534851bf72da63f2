// Fuzz target: the event store's parsers over arbitrary bytes (docs/format/store.md).
// Input: u32 manifest length, the manifest, then one shard file. Exercises the manifest and
// schema parser (with the version-3 run extents and dictionary), the shard header, lumi table
// and directory parsers, every index record the header points at (versions 1-2: checksum,
// header fields, group offsets against the C block; version 3: the 24-byte locator and the E
// block it names), every C block header (1-2) and every E block header and, for raw E blocks,
// the payload layout against the schema (3).
#include <cstdint>
#include <span>
#include <vector>

#include "base/endian.h"
#include "store/format.h"

using namespace ferry::store;  // NOLINT: fuzz driver

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) {
    return 0;
  }
  std::span<const uint8_t> in(data, size);
  const size_t mlen = std::min<size_t>(ferry::LoadLE<uint32_t>(data), size - 4);
  auto manifest = Manifest::Parse(in.subspan(4, mlen));
  std::span<const uint8_t> shard = in.subspan(4 + mlen);
  auto header = ShardHeader::Parse(shard.first(std::min<size_t>(shard.size(), kShardHeaderSize)),
                                   shard.size());
  if (!header.has_value()) {
    return 0;
  }
  const ShardHeader& h = *header;
  auto section = [&](int s) {
    return shard.subspan(h.sections[s].offset, h.sections[s].size);
  };
  auto lumis = ParseLumiTable(section(kLumiTable), h.events, h.event_extent);
  (void)lumis;
  if (!manifest.has_value() || manifest->record_size() != h.record_size) {
    return 0;
  }
  const Schema& schema = manifest->schema;
  if (h.version >= 3) {
    auto layout =
        Layout::Make(1, h.lumi_extent, h.event_extent, h.record_size, h.sections[kIndex].offset);
    if (!layout.has_value()) {
      return 0;
    }
    auto eblock = [&](uint64_t offset, uint64_t bytes) {
      if (offset > shard.size() || bytes > shard.size() - offset) {
        return;
      }
      auto block = shard.subspan(offset, bytes);
      auto eh = ParseEBlockHeader(block, true);
      if (eh.has_value() && eh->raw_size == bytes - kEBlockHeaderBytes) {
        std::vector<uint64_t> begin;
        std::vector<uint64_t> end;
        (void)LayoutEPayload(block.subspan(kEBlockHeaderBytes), schema, eh->events, &begin, &end);
      }
    };
    const uint64_t slots = std::min<uint64_t>(layout->shard_slots(), 256);
    for (uint64_t k = 0; k < slots; ++k) {
      RecordV3 r;
      auto present = ParseRecordV3(
          shard.subspan(layout->index_offset() + k * kRecordV3Bytes, kRecordV3Bytes), &r);
      if (present.has_value() && *present) {
        eblock(r.block_offset, r.block_size);
      }
    }
    auto table = section(kCTable);
    for (size_t b = 0; b + kCTableEntryBytes <= table.size() && b < 256 * kCTableEntryBytes;
         b += kCTableEntryBytes) {
      CBlockRef ref = ParseCBlockRef(table.subspan(b, kCTableEntryBytes));
      eblock(ref.offset, ref.size);
    }
    return 0;
  }
  auto layout =
      Layout::Make(1, h.lumi_extent, h.event_extent, h.record_size, h.sections[kIndex].offset);
  if (!layout.has_value()) {
    return 0;
  }
  const uint64_t slots = std::min<uint64_t>(layout->shard_slots(), 256);
  for (uint64_t k = 0; k < slots; ++k) {
    auto rec = shard.subspan(layout->index_offset() + k * h.record_size, h.record_size);
    auto present = CheckRecord(rec);
    if (!present.has_value() || !*present) {
      continue;
    }
    RecordHeader rh = ReadRecordHeader(rec);
    if (rh.cblock_offset > shard.size() || rh.cblock_size > shard.size() - rh.cblock_offset) {
      continue;
    }
    auto block = shard.subspan(rh.cblock_offset, rh.cblock_size);
    auto bh = ParseCBlockHeader(block, rh.cblock_size, schema, true);
    if (bh.has_value()) {
      for (size_t g = 0; g < schema.groups(); ++g) {
        (void)(ferry::LoadLE<uint32_t>(rec.data() + Schema::GroupOffsetAt(g))
               <= bh->group_elements[g]);
      }
    }
  }
  auto table = section(kCTable);
  for (size_t b = 0; b + kCTableEntryBytes <= table.size() && b < 256 * kCTableEntryBytes;
       b += kCTableEntryBytes) {
    CBlockRef ref = ParseCBlockRef(table.subspan(b, kCTableEntryBytes));
    if (ref.offset <= shard.size() && ref.size <= shard.size() - ref.offset) {
      (void)ParseCBlockHeader(shard.subspan(ref.offset, ref.size), ref.size, schema, false);
    }
  }
  auto dir = section(kSDirectory);
  for (size_t b = 0; b + kSDirEntryBytes <= dir.size() && b < 256 * kSDirEntryBytes;
       b += kSDirEntryBytes) {
    (void)ParseChunkRef(dir.subspan(b, kSDirEntryBytes));
  }
  return 0;
}
