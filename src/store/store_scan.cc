// Store::Scan and Store::Verify: the whole-store paths (see store.h).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "base/crc32c.h"
#include "base/endian.h"
#include "store/counts.h"
#include "store/scan_state.h"
#include "store/shard.h"
#include "store/shuffle.h"
#include "store/store.h"

namespace ferry::store {
namespace {

constexpr uint64_t kVerifyIndexSlice = 4u << 20;

// Makes col an empty column of spec's shape for events [first, first + n), keeping its buffers
// (offsets keep their length: the caller overwrites every entry, so no zero fill).
void Restart(const ColumnSpec& spec, uint64_t first, uint64_t n, rootio::Column* col) {
  col->type = spec.type;
  col->jagged = spec.jagged();
  col->fixed_len = spec.jagged() ? 1 : spec.len;
  col->first_entry = static_cast<int64_t>(first);
  col->num_entries = static_cast<int64_t>(n);
  if (!spec.jagged()) {
    col->offsets.clear();
  }
}

}  // namespace

Status Store::Scan(std::span<const int32_t> columns,
                   const std::function<Status(const ScanBatch&)>& fn) {
  return Scan(columns, fn, ScanOptions{}, nullptr);
}

Status Store::Scan(std::span<const int32_t> columns,
                   const std::function<Status(const ScanBatch&)>& fn,
                   const ScanOptions& options,
                   ScanReport* report) {
  ScanReport unused;
  ScanReport* rep = report != nullptr ? report : &unused;
  ScanState st(schema(), columns);
  rep->columns.clear();
  for (const size_t q : st.jagged_at) {
    rep->columns.push_back({.column = columns[q]});
  }
  CopyBuild build;
  FERRY_TRY(StartCopyBuild(options, build, rep));
  for (size_t r = 0; r < manifest_.runs.size(); ++r) {
    Result<Shard*> shard = Attach(r);
    Status done = shard.has_value() ? ScanShard(**shard, columns, st, fn, build, rep)
                                    : Status(std::move(shard).error());
    if (!done.has_value()) {
      build.Abandon(st);
      return done;
    }
  }
  return EndCopyBuild(build, rep);
}

Status Store::ScanShard(Shard& shard,
                        std::span<const int32_t> columns,
                        ScanState& st,
                        const std::function<Status(const ScanBatch&)>& fn,
                        CopyBuild& build,
                        ScanReport* report) {
  const Schema& s = schema();
  const ShardHeader& h = shard.header();
  const uint64_t ks = uint64_t{1} << h.log2_ks;
  // The directory slices this scan needs, in one request.
  std::vector<size_t> slots;
  slots.reserve(st.fixed.size());
  for (int32_t f : st.fixed) {
    slots.push_back(static_cast<size_t>(s.columns[static_cast<size_t>(f)].slot));
  }
  if (shard.has_j_chunks()) {
    for (int32_t c : columns) {
      const ColumnSpec& spec = s.columns[static_cast<size_t>(c)];
      if (spec.jagged()) {
        slots.push_back(s.fixed.size() + static_cast<size_t>(spec.slot));
      }
    }
  }
  FERRY_TRY_CTX(shard.LoadSDirectory(slots), "shard " + shard.path());
  // Version 3 without J chunks: collections from column copies where there are some.
  const bool copies = shard.v3() && !shard.has_j_chunks() && !st.jagged_at.empty();
  if (copies) {
    PrepareCopies(shard, columns, st, build, report);
  } else {
    // J chunks (--scan-copy, version 2) are column-major copies inside the shard.
    for (ScanColumnReport& c : report->columns) {
      ++(shard.has_j_chunks() ? c.shards_from_copies : c.shards_from_blocks);
    }
  }
  for (uint64_t b = 0; b < h.s_blocks(); ++b) {
    const uint64_t first = b * ks;
    const uint64_t n = std::min(ks, h.events - first);
    const std::string where = "shard " + shard.path() + " > S block " + std::to_string(b);
    FERRY_TRY(ReadFixedChunks(shard, b, first, n, where, st));
    st.batch.run = h.run;
    st.batch.first_ordinal = first;
    st.batch.events = static_cast<int64_t>(n);
    FillBatch(s, columns, first, n, st);
    if (copies) {
      FERRY_TRY_CTX(FillJaggedV3(shard, b, columns, st, report), where);
    } else if (!st.jagged_at.empty()) {
      FERRY_TRY_CTX(FillJagged(shard, first, n, columns, st.jagged_at, &st.batch, &st.scratch,
                               &st.header_scratch),
                    where);
    }
    FERRY_TRY(fn(st.batch));
  }
  return copies ? FinishShardCopies(st, build, report) : OkStatus();
}

// Every fixed column's chunk of S block b in one request, decoded into st.fixed_cols.
Status Store::ReadFixedChunks(
    Shard& shard, uint64_t b, uint64_t first, uint64_t n, const std::string& where, ScanState& st) {
  const Schema& s = schema();
  st.refs.clear();
  st.ranges.clear();
  for (int32_t f : st.fixed) {
    ChunkRef ref =
        FERRY_TRY(shard.SChunk(static_cast<size_t>(s.columns[static_cast<size_t>(f)].slot), b));
    st.refs.push_back(ref);
    st.ranges.emplace_back(ref.offset, ref.size);
  }
  FERRY_TRY_CTX(shard.BytesV(st.ranges, &st.bufs, &st.got), where);
  for (size_t k = 0; k < st.fixed.size(); ++k) {
    const ColumnSpec& c = s.columns[static_cast<size_t>(st.fixed[k])];
    rootio::Column& col = st.fixed_cols[k];
    Restart(c, first, n, &col);
    col.bytes.resize(n * c.len * c.value_size());
    FERRY_TRY_CTX(DecodeSChunk(st.refs[k], st.got[k], shard.v3(), c.value_size(), col.bytes),
                  "column " + c.name + " (S chunk) > " + where);
    ++counters_.block_reads;
  }
  return OkStatus();
}

// Jagged columns first (their offsets come from the counters in fixed_cols; their values
// are filled later), then the fixed ones are swapped in (copied only when asked for twice).
// Buffers circulate between fixed_cols and the batch, so a scan allocates only in its first
// block.
void Store::FillBatch(
    const Schema& s, std::span<const int32_t> columns, uint64_t first, uint64_t n, ScanState& st) {
  for (size_t q = 0; q < columns.size(); ++q) {
    const ColumnSpec& spec = s.columns[static_cast<size_t>(columns[q])];
    if (!spec.jagged()) {
      continue;
    }
    const rootio::Column& counts = st.fixed_cols[st.fixed_of[q]];
    rootio::Column& col = st.batch.columns[q];
    Restart(spec, first, n, &col);
    std::vector<uint64_t>& offsets = col.offsets.Mutable();
    offsets.resize(n + 1);
    offsets[0] = 0;
    uint64_t* off = offsets.data();
    ForEachCount(counts.bytes.data(), counts.type, n,
                 [&](size_t i, uint64_t v) { off[i + 1] = off[i] + v * spec.len; });
    col.bytes.resize(col.offsets[n] * spec.value_size());
  }
  std::fill(st.swapped.begin(), st.swapped.end(), false);
  for (size_t q = 0; q < columns.size(); ++q) {
    if (s.columns[static_cast<size_t>(columns[q])].jagged()) {
      continue;
    }
    const size_t k = st.fixed_of[q];
    if (!st.swapped[k]) {
      std::swap(st.batch.columns[q], st.fixed_cols[k]);
      st.swapped[k] = true;
      st.first_at[k] = q;
    } else {
      st.batch.columns[q] = st.batch.columns[st.first_at[k]];
    }
  }
}

Status Store::FillJagged(Shard& shard,
                         uint64_t first,
                         uint64_t n,
                         std::span<const int32_t> columns,
                         const std::vector<size_t>& jagged_at,
                         ScanBatch* batch,
                         std::vector<uint8_t>* scratch,
                         std::vector<uint8_t>* header_scratch) {
  const Schema& s = schema();
  const uint64_t ks = uint64_t{1} << shard.header().log2_ks;
  if (shard.has_j_chunks() && first % ks == 0 && n == std::min(ks, shard.header().events - first)) {
    // A whole S block: each column's J chunk, all in one request, one decode per column.
    std::vector<ChunkRef> refs;
    std::vector<std::pair<uint64_t, size_t>> ranges;
    for (const size_t q : jagged_at) {
      const ColumnSpec& spec = s.columns[static_cast<size_t>(columns[q])];
      refs.push_back(
          FERRY_TRY(shard.SChunk(s.fixed.size() + static_cast<size_t>(spec.slot), first / ks)));
      ranges.emplace_back(refs.back().offset, refs.back().size);
    }
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<std::span<const uint8_t>> got;
    FERRY_TRY(shard.BytesV(ranges, &bufs, &got));
    for (size_t q = 0; q < jagged_at.size(); ++q) {
      const ColumnSpec& spec = s.columns[static_cast<size_t>(columns[jagged_at[q]])];
      rootio::Column& col = batch->columns[jagged_at[q]];
      FERRY_TRY_CTX(DecodeSChunk(refs[q], got[q], shard.v3(), spec.value_size(), col.bytes),
                    "column " + spec.name + " (J chunk)");
      ++counters_.block_reads;
    }
    return OkStatus();
  }
  if (shard.v3()) {
    return FillJaggedFromE(shard, first, n, columns, jagged_at, batch);
  }
  const uint64_t kc = uint64_t{1} << shard.header().log2_kc;
  const size_t hb = CBlockHeaderBytes(s.groups(), s.jagged.size());
  std::vector<uint64_t> filled(jagged_at.size(), 0);
  std::vector<uint64_t> stored_at(s.jagged.size() + 1);
  for (uint64_t cb = first / kc; cb * kc < first + n; ++cb) {
    CBlockRef ref = FERRY_TRY(shard.CBlock(cb));
    auto head = FERRY_TRY(shard.Bytes(ref.offset, std::min<size_t>(hb, ref.size), header_scratch));
    CBlockHeader bh = FERRY_TRY_CTX(ParseCBlockHeader(head, ref.size, s, false),
                                    "collection block " + std::to_string(cb));
    uint64_t at = bh.header_bytes;
    uint64_t wanted = 0;
    for (size_t j = 0; j < s.jagged.size(); ++j) {
      stored_at[j] = at;
      at += bh.chunk_sizes[j];
    }
    for (const size_t q : jagged_at) {
      wanted +=
          bh.chunk_sizes[static_cast<size_t>(s.columns[static_cast<size_t>(columns[q])].slot)];
    }
    // Many of the block's columns: one read of the whole block; a few: one read per chunk.
    std::span<const uint8_t> whole;
    if (2 * wanted >= ref.size) {
      whole = FERRY_TRY(shard.Bytes(ref.offset, ref.size, scratch));
      ++counters_.block_reads;
    }
    for (size_t q = 0; q < jagged_at.size(); ++q) {
      const ColumnSpec& spec = s.columns[static_cast<size_t>(columns[jagged_at[q]])];
      rootio::Column& col = batch->columns[jagged_at[q]];
      const auto j = static_cast<size_t>(spec.slot);
      const uint64_t raw = uint64_t{bh.group_elements[static_cast<size_t>(spec.group)]} * spec.len
                           * spec.value_size();
      if (raw > col.bytes.size() - filled[q]) {
        return CorruptionError("column " + spec.name
                               + ": C blocks hold more values than the counters say");
      }
      std::span<const uint8_t> stored;
      if (!whole.empty()) {
        stored = whole.subspan(stored_at[j], bh.chunk_sizes[j]);
      } else {
        stored = FERRY_TRY(shard.Bytes(ref.offset + stored_at[j], bh.chunk_sizes[j], scratch));
        ++counters_.block_reads;
      }
      FERRY_TRY_CTX(DecodeChunk(stored, std::span(col.bytes).subspan(filled[q], raw)),
                    "column " + spec.name);
      filled[q] += raw;
    }
  }
  for (size_t q = 0; q < jagged_at.size(); ++q) {
    if (filled[q] != batch->columns[jagged_at[q]].bytes.size()) {
      return CorruptionError("column " + s.columns[static_cast<size_t>(columns[jagged_at[q]])].name
                             + ": C blocks hold fewer values than the counters say");
    }
  }
  return OkStatus();
}

Result<ChunkRef> Store::ReadSChunk(Shard& shard,
                                   size_t slot,
                                   uint64_t block,
                                   std::span<uint8_t> raw,
                                   std::vector<uint8_t>* scratch) {
  ChunkRef ref = FERRY_TRY(shard.SChunk(slot, block));
  auto stored = FERRY_TRY(shard.Bytes(ref.offset, ref.size, scratch));
  const Schema& s = schema();
  const auto c =
      static_cast<size_t>(slot < s.fixed.size() ? s.fixed[slot] : s.jagged[slot - s.fixed.size()]);
  FERRY_TRY(DecodeSChunk(ref, stored, shard.v3(), s.columns[c].value_size(), raw));
  return ref;
}

Status Store::DecodeSChunk(const ChunkRef& ref,
                           std::span<const uint8_t> stored,
                           bool shuffled,
                           size_t w,
                           std::span<uint8_t> raw) {
  if (crc32c::Value(stored) != ref.crc) {
    return CorruptionError("chunk checksum mismatch (" + std::to_string(ref.size)
                           + " bytes at offset " + std::to_string(ref.offset) + ")");
  }
  if (!shuffled || w == 1) {
    return DecodeChunk(stored, raw);
  }
  unshuffle_scratch_.resize(raw.size());
  FERRY_TRY(DecodeChunk(stored, unshuffle_scratch_));
  UnshuffleBytes(unshuffle_scratch_.data(), raw.size() / w, w, raw.data());
  return OkStatus();
}

Result<VerifyReport> Store::Verify() {
  VerifyReport rep;
  for (size_t r = 0; r < manifest_.runs.size(); ++r) {
    Shard* shard = FERRY_TRY(Attach(r));
    FERRY_TRY(VerifyShard(*shard, &rep));
  }
  return rep;
}

Status Store::VerifyShard(Shard& shard, VerifyReport* rep) {
  const Schema& s = schema();
  const ShardHeader& h = shard.header();
  const std::string where = "shard " + shard.path();
  FERRY_TRY_CTX(shard.CheckDirectories(), where);
  // Event numbers: checksum and order within each lumi.
  const std::vector<uint64_t> nums = FERRY_TRY_CTX(shard.AllEventNumbers(), where);
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> raw;
  // Blocks (C blocks, or E blocks in version 3): checksum, decode, event count. Their
  // collection elements per group and S block are the sizes the J chunks must decode to.
  std::vector<CBlockRef> blocks(h.c_blocks());
  std::vector<uint64_t> s_group_elements(h.s_blocks() * s.groups(), 0);
  for (uint64_t b = 0; b < h.c_blocks(); ++b) {
    blocks[b] = FERRY_TRY_CTX(shard.CBlock(b), where);
    const std::string bw = where + " > " + BlockNoun(shard) + " " + std::to_string(b);
    const uint64_t sb = b >> (h.log2_ks - h.log2_kc);
    const std::span<uint64_t> elements(s_group_elements.data() + sb * s.groups(), s.groups());
    const std::optional<uint64_t> events =
        shard.v3() ? FERRY_TRY(VerifyEBlock(shard, b, blocks[b], bw, elements, &scratch))
                   : FERRY_TRY(VerifyCBlock(shard, blocks[b], bw, elements, &scratch, &raw));
    if (!events.has_value()) {
      continue;  // a version 1-2 shard without collections has empty C blocks
    }
    const uint64_t want =
        std::min(uint64_t{1} << h.log2_kc, h.events - b * (uint64_t{1} << h.log2_kc));
    if (*events != blocks[b].events || *events != want) {
      return CorruptionError(bw + ": holds " + std::to_string(*events) + " events, expected "
                             + std::to_string(want));
    }
    ++rep->c_blocks;
    rep->bytes += blocks[b].size;
  }
  FERRY_TRY(VerifySChunks(shard, where, s_group_elements, rep, &scratch, &raw));
  FERRY_TRY(VerifyCopies(shard, s_group_elements, rep));
  return VerifyRecords(shard, where, nums, blocks, rep, &scratch);
}

const char* Store::BlockNoun(const Shard& shard) {
  return shard.v3() ? "E block" : "collection block";
}

Result<std::optional<uint64_t>> Store::VerifyCBlock(Shard& shard,
                                                    const CBlockRef& ref,
                                                    const std::string& bw,
                                                    std::span<uint64_t> group_elements,
                                                    std::vector<uint8_t>* scratch,
                                                    std::vector<uint8_t>* raw) {
  const Schema& s = schema();
  if (s.jagged.empty()) {
    return std::nullopt;
  }
  auto block = FERRY_TRY_CTX(shard.Bytes(ref.offset, ref.size, scratch), bw);
  CBlockHeader bh = FERRY_TRY_CTX(ParseCBlockHeader(block, ref.size, s, true), bw);
  for (size_t g = 0; g < s.groups(); ++g) {
    group_elements[g] += bh.group_elements[g];
  }
  uint64_t at = bh.header_bytes;
  for (size_t j = 0; j < s.jagged.size(); ++j) {
    const ColumnSpec& c = s.columns[static_cast<size_t>(s.jagged[j])];
    raw->resize(uint64_t{bh.group_elements[static_cast<size_t>(c.group)]} * c.len * c.value_size());
    FERRY_TRY_CTX(DecodeChunk(block.subspan(at, bh.chunk_sizes[j]), *raw),
                  "column " + c.name + " > " + bw);
    at += bh.chunk_sizes[j];
  }
  return bh.events;
}

Status Store::VerifySChunks(Shard& shard,
                            const std::string& where,
                            std::span<const uint64_t> s_group_elements,
                            VerifyReport* rep,
                            std::vector<uint8_t>* scratch,
                            std::vector<uint8_t>* raw) {
  const Schema& s = schema();
  const ShardHeader& h = shard.header();
  // S chunks of the fixed columns, then the J chunks of the jagged ones, sized by the blocks'
  // element totals.
  for (size_t slot = 0; slot < shard.s_dir_columns(); ++slot) {
    const bool fixed = slot < s.fixed.size();
    const ColumnSpec& c =
        s.columns[static_cast<size_t>(fixed ? s.fixed[slot] : s.jagged[slot - s.fixed.size()])];
    for (uint64_t b = 0; b < h.s_blocks(); ++b) {
      const std::string bw = where + (fixed ? " > S chunk of " : " > J chunk of ") + c.name
                             + " in block " + std::to_string(b);
      const uint64_t values =
          fixed ? std::min(uint64_t{1} << h.log2_ks, h.events - b * (uint64_t{1} << h.log2_ks))
                : s_group_elements[b * s.groups() + static_cast<size_t>(c.group)];
      raw->resize(values * c.len * c.value_size());
      ChunkRef ref = FERRY_TRY_CTX(ReadSChunk(shard, slot, b, *raw, scratch), bw);
      ++rep->s_chunks;
      rep->bytes += ref.size;
    }
  }
  return OkStatus();
}

namespace {

// An index record of either layout, as Verify compares it.
struct SlotRecord {
  uint64_t event = 0;  // version 3: the low 32 bits
  uint64_t ordinal = 0;
  uint64_t block_offset = 0;
  uint64_t block_size = 0;
};

// Parses (and checks the CRC of) a present record; false for a padding slot.
Result<bool> ParseSlotRecord(bool v3, std::span<const uint8_t> bytes, SlotRecord* out) {
  if (v3) {
    RecordV3 r;
    const bool present = FERRY_TRY(ParseRecordV3(bytes, &r));
    *out = {r.event_low, r.ordinal, r.block_offset, r.block_size};
    return present;
  }
  const bool present = FERRY_TRY(CheckRecord(bytes));
  const RecordHeader rh = ReadRecordHeader(bytes);
  *out = {rh.event, rh.ordinal, rh.cblock_offset, rh.cblock_size};
  return present;
}

}  // namespace

Status Store::VerifyRecords(Shard& shard,
                            const std::string& where,
                            std::span<const uint64_t> nums,
                            std::span<const CBlockRef> blocks,
                            VerifyReport* rep,
                            std::vector<uint8_t>* scratch) {
  // Every index record: padding, or present with a good checksum, the event number (version
  // 3: its low bits) of its slot, a unique ordinal and the block that ordinal belongs to.
  const ShardHeader& h = shard.header();
  const Layout& lay = shard.layout();
  const uint64_t rs = lay.record_size();
  // Version 3's compact index is read in one request; the older, wider one in slices.
  const uint64_t per_slice =
      shard.v3() ? lay.shard_slots() : std::max<uint64_t>(1, kVerifyIndexSlice / rs);
  std::vector<bool> seen(h.events, false);
  for (uint64_t k = 0; k < lay.shard_slots(); k += per_slice) {
    const uint64_t n = std::min(per_slice, lay.shard_slots() - k);
    auto bytes = FERRY_TRY_CTX(shard.Bytes(lay.index_offset() + k * rs, n * rs, scratch), where);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t l = (k + i) / lay.events();
      const uint64_t e = (k + i) % lay.events();
      const std::string rw =
          where + " > record of slot (" + std::to_string(l) + ", " + std::to_string(e) + ")";
      SlotRecord r;
      const bool present =
          FERRY_TRY_CTX(ParseSlotRecord(shard.v3(), bytes.subspan(i * rs, rs), &r), rw);
      const bool expected = l < shard.lumis().size() && e < shard.lumis()[l].count;
      if (present != expected) {
        return CorruptionError(
            rw + (present ? ": a padding slot holds a record" : ": the record is missing"));
      }
      if (!present) {
        ++rep->padding;
        continue;
      }
      const uint64_t num = nums[shard.lumis()[l].first + e];
      if (r.event != (shard.v3() ? uint64_t{static_cast<uint32_t>(num)} : num)
          || r.ordinal >= h.events || seen[r.ordinal]) {
        return CorruptionError(rw + ": event number or ordinal inconsistent");
      }
      seen[r.ordinal] = true;
      const CBlockRef& block = blocks[r.ordinal >> h.log2_kc];
      if (r.block_offset != block.offset || r.block_size != block.size) {
        return CorruptionError(rw + ": points at the wrong " + BlockNoun(shard));
      }
      ++rep->records;
    }
    rep->bytes += n * rs;
  }
  return OkStatus();
}

}  // namespace ferry::store
