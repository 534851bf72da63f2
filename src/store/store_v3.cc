// Store: the version-3 paths (see store.h, docs/format/store.md): picks through 24-byte records
// and E blocks, collections of scans from E blocks, and verification.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "base/crc32c.h"
#include "base/endian.h"
#include "store/counts.h"
#include "store/shard.h"
#include "store/shuffle.h"
#include "store/store.h"

namespace ferry::store {
namespace {

// Bounds a vector read (XRootD takes at most 1024 chunks a request; XrdSource splits larger
// ones anyway, but batches keep the memory of one request bounded too).
constexpr size_t kMaxRangesPerRequest = 1024;

// Appends values [first, first + count) of a shuffled column of n values of width w.
void AppendGathered(
    ByteVector* o, const uint8_t* col, size_t n, size_t w, size_t first, size_t count) {
  const size_t at = o->size();
  o->resize(at + count * w);
  GatherShuffled(col, n, w, first, count, o->data() + at);
}

}  // namespace

Result<Chunk> Store::DecodeEBlock(std::span<const uint8_t> bytes, uint64_t first_ordinal) {
  auto out = std::make_shared<DecodedBlock>();
  FERRY_TRY(DecodeEBlockInto(bytes, first_ordinal, out.get()));
  return Chunk(std::move(out));
}

Status Store::DecodeEBlockInto(std::span<const uint8_t> bytes,
                               uint64_t first_ordinal,
                               DecodedBlock* out) {
  const Schema& s = schema();
  EBlockHeader h = FERRY_TRY(ParseEBlockHeader(bytes, true));
  out->data.resize(h.raw_size);
  if ((h.flags & kEBlockFlagDictionary) != 0) {
    if (dict_ == nullptr) {
      return CorruptionError("E block compressed with a dictionary the manifest does not have");
    }
    ++counters_.chunks_decompressed;
    FERRY_TRY(dict_->Decompress(bytes.subspan(kEBlockHeaderBytes), out->data));
  } else {
    FERRY_TRY(DecodeChunk(bytes.subspan(kEBlockHeaderBytes), out->data));
  }
  FERRY_TRY(LayoutEPayload(out->data, s, h.events, &out->begin, &out->end));
  out->events = h.events;
  out->first_ordinal = first_ordinal;
  // Element prefix sums per group, from the counters in the block; they must add up to the
  // group totals the payload starts with.
  const size_t n = h.events;
  out->prefix.resize(s.groups() * (n + 1));
  for (size_t g = 0; g < s.groups(); ++g) {
    const auto k = static_cast<size_t>(s.group_counters[g]);
    const ColumnSpec& counter = s.columns[k];
    unshuffle_scratch_.resize(n * counter.value_size());
    UnshuffleBytes(out->data.data() + out->begin[k], n, counter.value_size(),
                   unshuffle_scratch_.data());
    uint32_t* p = out->prefix.data() + g * (n + 1);
    p[0] = 0;
    uint64_t sum = 0;
    ForEachCount(unshuffle_scratch_.data(), counter.type, n, [&](size_t i, uint64_t v) {
      sum += v;
      p[i + 1] = static_cast<uint32_t>(sum);
    });
    if (sum > UINT32_MAX) {
      return CorruptionError("E block: counter " + counter.name + " overflows");
    }
    if (sum != LoadLE<uint32_t>(out->data.data() + 4 * g)) {
      return CorruptionError("E block: counter " + counter.name
                             + " does not add up to the group's elements");
    }
  }
  ++counters_.block_reads;
  return OkStatus();
}

// One event of a version-3 pick: where its record is, the record, then its values copied out
// of its E block as soon as the block is decoded. Holding the blocks themselves until the end
// made a pick list's memory grow by a whole decoded block (~70 KB) per event.
struct Store::PickV3 {
  size_t shard;
  uint64_t record_offset;
  uint64_t event;
  RecordV3 rec;
  ByteVector values;              // the requested columns' values, one column after another
  std::vector<uint32_t> lengths;  // values of each requested jagged column, in order
};

Status Store::ReadEventsV3(std::span<const EventId> ids,
                           std::span<const int32_t> columns,
                           std::vector<rootio::Column>* out) {
  // 1. Resolve every id to its shard and record offset (attaching shards on first use).
  std::vector<PickV3> wants(ids.size());
  std::map<size_t, std::vector<size_t>> by_shard;  // run slot -> indices into wants
  for (size_t i = 0; i < ids.size(); ++i) {
    const Resolved at = FERRY_TRY(Resolve(ids[i]));
    wants[i].shard = at.run_slot;
    wants[i].record_offset = at.shard->layout().RecordOffset(at.lumi_slot, at.event_slot);
    wants[i].event = ids[i].event;
    by_shard[at.run_slot].push_back(i);
  }
  for (auto& [r, list] : by_shard) {
    FERRY_TRY(ReadPickedRecords(*shards_[r], ids, list, wants));
    FERRY_TRY(ReadPickedBlocks(r, ids, columns, list, wants));
  }
  AssemblePicked(columns, wants, out);
  return OkStatus();
}

// 2. Every record of the shard's events: one request per batch.
Status Store::ReadPickedRecords(Shard& shard,
                                std::span<const EventId> ids,
                                std::span<const size_t> list,
                                std::span<PickV3> wants) {
  const SectionRef& payload = shard.header().sections[kPayload];
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<std::span<const uint8_t>> got;
  std::vector<std::pair<uint64_t, size_t>> ranges;
  for (size_t at = 0; at < list.size(); at += kMaxRangesPerRequest) {
    const size_t n = std::min(kMaxRangesPerRequest, list.size() - at);
    ranges.clear();
    for (size_t k = 0; k < n; ++k) {
      ranges.emplace_back(wants[list[at + k]].record_offset, kRecordV3Bytes);
    }
    FERRY_TRY_CTX(shard.BytesV(ranges, &bufs, &got), "shard " + shard.path() + " > records");
    counters_.record_reads += n;
    for (size_t k = 0; k < n; ++k) {
      PickV3& w = wants[list[at + k]];
      const EventId& id = ids[list[at + k]];
      auto where = [&] {
        return "shard " + shard.path() + " > record of event " + id.ToString();
      };
      bool present = FERRY_TRY_CTX(ParseRecordV3(got[k], &w.rec), where());
      if (!present || w.rec.event_low != static_cast<uint32_t>(id.event)
          || w.rec.ordinal >= shard.header().events) {
        return CorruptionError("index record does not match the event array").AddContext(where());
      }
      if (w.rec.block_offset < payload.offset || w.rec.block_offset > payload.offset + payload.size
          || w.rec.block_size > payload.offset + payload.size - w.rec.block_offset) {
        return CorruptionError("E block outside the payload").AddContext(where());
      }
    }
  }
  return OkStatus();
}

// 3. The E blocks not cached: one request per batch, each decoded once.
Status Store::ReadPickedBlocks(size_t r,
                               std::span<const EventId> ids,
                               std::span<const int32_t> columns,
                               std::span<const size_t> list,
                               std::span<PickV3> wants) {
  Shard& shard = *shards_[r];
  const uint64_t kc_log2 = shard.header().log2_kc;
  std::map<uint64_t, std::vector<size_t>> picks_of;  // E block offset -> its picks
  for (size_t i : list) {
    picks_of[wants[i].rec.block_offset].push_back(i);
  }
  std::vector<const std::vector<size_t>*> missing;
  for (const auto& [offset, picks] : picks_of) {
    Chunk c = cache_->Find({r, offset});
    if (c == nullptr) {
      missing.push_back(&picks);
    } else {
      FERRY_TRY(CopyOutPicks(*c, ids, columns, picks, wants));
    }
  }
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<std::span<const uint8_t>> got;
  std::vector<std::pair<uint64_t, size_t>> ranges;
  for (size_t at = 0; at < missing.size(); at += kMaxRangesPerRequest) {
    const size_t n = std::min(kMaxRangesPerRequest, missing.size() - at);
    ranges.clear();
    for (size_t k = 0; k < n; ++k) {
      const PickV3& w = wants[missing[at + k]->front()];
      ranges.emplace_back(w.rec.block_offset, w.rec.block_size);
    }
    FERRY_TRY_CTX(shard.BytesV(ranges, &bufs, &got), "shard " + shard.path() + " > E blocks");
    for (size_t k = 0; k < n; ++k) {
      const std::vector<size_t>& picks = *missing[at + k];
      const PickV3& w = wants[picks.front()];
      const uint64_t first = (uint64_t{w.rec.ordinal} >> kc_log2) << kc_log2;
      auto where = [&] {
        return "shard " + shard.path() + " > E block at " + std::to_string(w.rec.block_offset)
               + " (event " + ids[picks.front()].ToString() + ")";
      };
      // A block is kept once it is missed a second time (BlockCache::Admit); a scattered
      // list's blocks are decoded into the same scratch, one after another.
      const BlockCache::Key key{r, w.rec.block_offset};
      const DecodedBlock* block = &block_scratch_;
      Chunk kept;
      if (cache_->Admit(key)) {
        kept = FERRY_TRY_CTX(DecodeEBlock(got[k], first), where());
        cache_->Insert(key, kept);
        block = kept.get();
      } else {
        FERRY_TRY_CTX(DecodeEBlockInto(got[k], first, &block_scratch_), where());
      }
      FERRY_TRY_CTX(CopyOutPicks(*block, ids, columns, picks, wants), where());
    }
  }
  return OkStatus();
}

// The values of the block's picked events, each into its PickV3.
Status Store::CopyOutPicks(const DecodedBlock& b,
                           std::span<const EventId> ids,
                           std::span<const int32_t> columns,
                           std::span<const size_t> picks,
                           std::span<PickV3> wants) {
  const Schema& s = schema();
  const size_t n = b.events;
  for (size_t i : picks) {
    PickV3& w = wants[i];
    w.values.reserve(pick_bytes_hint_);  // grown from empty, it reallocated a dozen times
    const uint64_t pos = w.rec.ordinal - b.first_ordinal;
    if (w.rec.ordinal < b.first_ordinal || pos >= b.events) {
      return CorruptionError("event " + ids[i].ToString() + ": ordinal " + std::to_string(pos)
                             + " is outside its E block");
    }
    for (const int32_t column : columns) {
      const ColumnSpec& c = s.columns[static_cast<size_t>(column)];
      const uint8_t* col = b.data.data() + b.begin[static_cast<size_t>(column)];
      const size_t wsz = c.value_size();
      if (!c.jagged()) {
        AppendGathered(&w.values, col, n * c.len, wsz, pos * c.len, c.len);
        continue;
      }
      const uint32_t* p = b.prefix.data() + static_cast<size_t>(c.group) * (n + 1);
      const size_t total =
          (b.end[static_cast<size_t>(column)] - b.begin[static_cast<size_t>(column)]) / wsz;
      const uint64_t count = uint64_t{p[pos + 1] - p[pos]} * c.len;
      AppendGathered(&w.values, col, total, wsz, uint64_t{p[pos]} * c.len, count);
      w.lengths.push_back(static_cast<uint32_t>(count));
    }
    pick_bytes_hint_ = std::max(pick_bytes_hint_, w.values.size());
  }
  return OkStatus();
}

// 4. Values, in list order (every column's buffers sized once for the list: grown value by
// value they reallocated and faulted in fresh pages over and over); each event's copy is
// released once it is in the output.
void Store::AssemblePicked(std::span<const int32_t> columns,
                           std::span<PickV3> wants,
                           std::vector<rootio::Column>* out) const {
  const Schema& s = schema();
  // Where each column's values go: its bytes are sized for the whole list first.
  struct Sink {
    size_t width;
    uint32_t len;                    // values per event (fixed columns)
    std::vector<uint64_t>* offsets;  // jagged columns only
    uint8_t* base;
    size_t at;
  };
  std::vector<Sink> sinks(columns.size());
  std::vector<uint64_t> values(columns.size(), 0);  // of the whole list, per column
  for (size_t k = 0; k < columns.size(); ++k) {
    const ColumnSpec& c = s.columns[static_cast<size_t>(columns[k])];
    sinks[k] = {c.value_size(), c.len, c.jagged() ? &(*out)[k].offsets.Mutable() : nullptr, nullptr,
                0};
    values[k] = c.jagged() ? 0 : uint64_t{wants.size()} * c.len;
  }
  for (const PickV3& w : wants) {
    size_t jagged = 0;
    for (size_t k = 0; k < columns.size(); ++k) {
      if (sinks[k].offsets != nullptr) {
        values[k] += w.lengths[jagged++];
      }
    }
  }
  for (size_t k = 0; k < columns.size(); ++k) {
    rootio::Column& o = (*out)[k];
    sinks[k].at = o.bytes.size();
    o.bytes.resize(sinks[k].at + values[k] * sinks[k].width);  // not zeroed: all overwritten
    sinks[k].base = o.bytes.data();
    if (sinks[k].offsets != nullptr) {
      sinks[k].offsets->reserve(sinks[k].offsets->size() + wants.size() + 1);
    }
    o.num_entries += static_cast<int64_t>(wants.size());
  }
  for (PickV3& w : wants) {
    size_t from = 0;
    size_t jagged = 0;
    for (Sink& sink : sinks) {
      const size_t bytes = (sink.offsets != nullptr ? w.lengths[jagged++] : sink.len) * sink.width;
      if (bytes != 0) {
        std::memcpy(sink.base + sink.at, w.values.data() + from, bytes);
      }
      from += bytes;
      sink.at += bytes;
      if (sink.offsets != nullptr) {
        sink.offsets->push_back(sink.at / sink.width);
      }
    }
    w.values = ByteVector();
    w.lengths = {};
  }
}

Status Store::FillJaggedFromE(Shard& shard,
                              uint64_t first,
                              uint64_t n,
                              std::span<const int32_t> columns,
                              const std::vector<size_t>& jagged_at,
                              ScanBatch* batch) {
  const Schema& s = schema();
  const uint64_t kc_log2 = shard.header().log2_kc;
  const uint64_t b0 = first >> kc_log2;
  const uint64_t b1 = ((first + n - 1) >> kc_log2) + 1;
  std::vector<uint64_t> filled(jagged_at.size(), 0);
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<std::span<const uint8_t>> got;
  std::vector<std::pair<uint64_t, size_t>> ranges;
  // The E blocks of the range in batches of one request each (they are not contiguous when S
  // chunks sit between them).
  for (uint64_t at = b0; at < b1; at += kMaxRangesPerRequest) {
    const uint64_t end = std::min<uint64_t>(b1, at + kMaxRangesPerRequest);
    ranges.clear();
    for (uint64_t b = at; b < end; ++b) {
      CBlockRef ref = FERRY_TRY(shard.CBlock(b));
      ranges.emplace_back(ref.offset, ref.size);
    }
    FERRY_TRY(shard.BytesV(ranges, &bufs, &got));
    for (uint64_t b = at; b < end; ++b) {
      FERRY_TRY_CTX(DecodeEBlockInto(got[b - at], b << kc_log2, &block_scratch_),
                    "E block " + std::to_string(b));
      const DecodedBlock& d = block_scratch_;
      // The block's events inside [first, first + n) (a scan batch is a whole S block, which
      // holds whole E blocks; the clamp keeps partial ranges right too).
      const uint64_t lo = std::max<uint64_t>(first, d.first_ordinal) - d.first_ordinal;
      const uint64_t hi =
          std::min<uint64_t>(first + n, d.first_ordinal + d.events) - d.first_ordinal;
      for (size_t q = 0; q < jagged_at.size(); ++q) {
        const int32_t c = columns[jagged_at[q]];
        const ColumnSpec& spec = s.columns[static_cast<size_t>(c)];
        const size_t w = spec.value_size();
        const uint32_t* p = d.prefix.data() + static_cast<size_t>(spec.group) * (d.events + 1);
        const size_t total = (d.end[static_cast<size_t>(c)] - d.begin[static_cast<size_t>(c)]) / w;
        const uint64_t v0 = uint64_t{p[lo]} * spec.len;
        const uint64_t count = uint64_t{p[hi] - p[lo]} * spec.len;
        rootio::Column& col = batch->columns[jagged_at[q]];
        if (count * w > col.bytes.size() - filled[q]) {
          return CorruptionError("column " + spec.name
                                 + ": E blocks hold more values than the counters say");
        }
        GatherShuffled(d.data.data() + d.begin[static_cast<size_t>(c)], total, w, v0, count,
                       col.bytes.data() + filled[q]);
        filled[q] += count * w;
      }
    }
  }
  for (size_t q = 0; q < jagged_at.size(); ++q) {
    if (filled[q] != batch->columns[jagged_at[q]].bytes.size()) {
      return CorruptionError("column " + s.columns[static_cast<size_t>(columns[jagged_at[q]])].name
                             + ": E blocks hold fewer values than the counters say");
    }
  }
  return OkStatus();
}

Result<std::optional<uint64_t>> Store::VerifyEBlock(Shard& shard,
                                                    uint64_t b,
                                                    const CBlockRef& ref,
                                                    const std::string& bw,
                                                    std::span<uint64_t> group_elements,
                                                    std::vector<uint8_t>* scratch) {
  auto bytes = FERRY_TRY_CTX(shard.Bytes(ref.offset, ref.size, scratch), bw);
  FERRY_TRY_CTX(DecodeEBlockInto(bytes, b << shard.header().log2_kc, &block_scratch_), bw);
  const DecodedBlock& d = block_scratch_;
  for (size_t g = 0; g < group_elements.size(); ++g) {
    group_elements[g] += d.prefix[g * (d.events + 1) + d.events];
  }
  return d.events;
}

}  // namespace ferry::store
