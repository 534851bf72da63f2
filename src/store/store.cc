#include "store/store.h"

#include <algorithm>
#include <cstring>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/strings.h"
#include "io/local_source.h"
#include "store/shard.h"

namespace ferry::store {
namespace {

constexpr uint64_t kMaxManifestBytes = 256u << 20;

}  // namespace

rootio::Column Store::StartColumnFor(const ColumnSpec& c) {
  rootio::Column col;
  col.type = c.type;
  col.jagged = c.jagged();
  col.fixed_len = c.jagged() ? 1 : c.len;
  if (col.jagged) {
    col.offsets.push_back(0);
  }
  return col;
}

namespace {

// Value of a fixed integer column (a counter) stored in a record.
uint64_t RecordUint(std::span<const uint8_t> rec, const ColumnSpec& c) {
  const uint8_t* p = rec.data() + c.record_offset;
  switch (c.type) {
    case rootio::LeafType::kInt8:
      return static_cast<uint64_t>(static_cast<int8_t>(*p));
    case rootio::LeafType::kUInt8:
      return *p;
    case rootio::LeafType::kInt16:
      return static_cast<uint64_t>(LoadLE<int16_t>(p));
    case rootio::LeafType::kUInt16:
      return LoadLE<uint16_t>(p);
    case rootio::LeafType::kInt32:
      return static_cast<uint64_t>(LoadLE<int32_t>(p));
    case rootio::LeafType::kUInt32:
      return LoadLE<uint32_t>(p);
    default:
      return LoadLE<uint64_t>(p);
  }
}

void AppendFixedFromRecord(std::span<const uint8_t> rec, const ColumnSpec& c, rootio::Column* out) {
  if (c.is_bool()) {
    for (uint32_t k = 0; k < c.len; ++k) {
      uint64_t bit = uint64_t{c.record_offset} + k;
      out->bytes.push_back(static_cast<uint8_t>((rec[bit / 8] >> (bit % 8)) & 1));
    }
  } else {
    const uint8_t* p = rec.data() + c.record_offset;
    out->bytes.insert(out->bytes.end(), p, p + c.len * c.value_size());
  }
  ++out->num_entries;
}

}  // namespace

std::string EventId::ToString() const {
  return std::to_string(run) + ":" + std::to_string(lumi) + ":" + std::to_string(event);
}

Result<EventId> ParseEventId(std::string_view text) {
  auto parts = Split(text, ':');
  if (parts.size() != 3) {
    return InvalidArgumentError("event '" + std::string(text) + "' is not RUN:LUMI:EVENT");
  }
  auto run = ParseUint(parts[0]);
  auto lumi = ParseUint(parts[1]);
  auto event = ParseUint(parts[2]);
  if (!run || !lumi || !event) {
    return InvalidArgumentError("event '" + std::string(text)
                                + "' is not RUN:LUMI:EVENT (decimal numbers)");
  }
  return EventId{*run, *lumi, *event};
}

const rootio::Column* Event::column(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) {
      return &columns_[i];
    }
  }
  return nullptr;
}

Status Event::Check(std::string_view name, size_t size, bool many) const {
  const rootio::Column* c = column(name);
  if (c == nullptr) {
    return NotFoundError("column " + std::string(name) + " was not read for event "
                         + id_.ToString());
  }
  if (c->value_size() != size) {
    return InvalidArgumentError("column " + std::string(name) + " holds "
                                + std::string(rootio::LeafTypeName(c->type)) + " values");
  }
  if (!many && (c->jagged || c->fixed_len != 1)) {
    return InvalidArgumentError("column " + std::string(name) + " is not a scalar");
  }
  return OkStatus();
}

Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir, const StoreOptions& options) {
  std::unique_ptr<Store> s(new Store());
  s->dir_ = dir;
  s->options_ = options;
  const std::string path = dir + "/" + kManifestName;
  const bool mmap = options.mode == IoMode::kMmap;
  std::unique_ptr<io::ByteSource> source;
  if (options.open) {
    source = FERRY_TRY_CTX(options.open(path, options.mode), "event store " + dir);
  } else {
    source = FERRY_TRY_CTX(io::OpenLocal(path, mmap ? io::LocalMode::kMmap : io::LocalMode::kPread),
                           "event store " + dir);
  }
  if (source->size() > kMaxManifestBytes) {
    return CorruptionError("manifest " + path + " is implausibly large");
  }
  std::vector<uint8_t> bytes;
  std::span<const uint8_t> view;
  if (auto v = source->View(0, source->size()); mmap && v) {
    view = *v;
    ++s->counters_.views;
  } else {
    bytes.resize(source->size());
    FERRY_TRY_CTX(source->ReadAt(0, bytes), path);
    view = bytes;
    ++s->counters_.reads;
    ++s->counters_.requests;
  }
  s->counters_.bytes += view.size();
  s->manifest_ = FERRY_TRY_CTX(Manifest::Parse(view), path);
  if (!s->manifest_.dictionary.empty()) {
    s->dict_ =
        FERRY_TRY_CTX(Dictionary::Make(s->manifest_.dictionary, s->manifest_.codec.level), path);
  }
  s->shards_.resize(s->manifest_.runs.size());
  s->cache_ = std::make_unique<BlockCache>(options.cache_bytes);
  return s;
}

Result<Shard*> Store::Attach(size_t run_slot) {
  if (shards_[run_slot] == nullptr) {
    const std::string path = dir_ + "/" + manifest_.runs[run_slot].file_name();
    shards_[run_slot] = FERRY_TRY(
        Shard::Attach(path, manifest_, run_slot, options_.mode, options_.open, &counters_));
  }
  return shards_[run_slot].get();
}

Result<std::vector<int32_t>> Store::ResolveColumns(std::span<const std::string> names) const {
  std::vector<int32_t> out;
  if (names.empty()) {
    for (size_t i = 0; i < schema().columns.size(); ++i) {
      out.push_back(static_cast<int32_t>(i));
    }
    return out;
  }
  for (const std::string& n : names) {
    int32_t c = schema().Find(n);
    if (c < 0) {
      return NotFoundError("the store has no column '" + n + "'");
    }
    out.push_back(c);
  }
  return out;
}

Result<Store::Resolved> Store::Resolve(const EventId& id) {
  int64_t r = manifest_.RunSlot(id.run);
  if (r < 0) {
    return NotFoundError("event " + id.ToString() + " is not in the store (no run "
                         + std::to_string(id.run) + ")");
  }
  Shard* shard = FERRY_TRY(Attach(static_cast<size_t>(r)));
  int64_t l = shard->LumiSlot(id.lumi);
  if (l < 0) {
    return NotFoundError("event " + id.ToString() + " is not in the store (run "
                         + std::to_string(id.run) + " has no lumi " + std::to_string(id.lumi)
                         + ")");
  }
  auto nums = FERRY_TRY_CTX(shard->EventNumbers(static_cast<size_t>(l)), "event " + id.ToString());
  auto it = std::lower_bound(nums.begin(), nums.end(), id.event);
  if (it == nums.end() || *it != id.event) {
    return NotFoundError("event " + id.ToString() + " is not in the store");
  }
  return Resolved{shard, static_cast<size_t>(r), static_cast<uint64_t>(l),
                  static_cast<uint64_t>(it - nums.begin())};
}

Result<bool> Store::Contains(const EventId& id) {
  auto r = Resolve(id);
  if (!r.has_value()) {
    if (r.error().code() == ErrorCode::kNotFound) {
      return false;
    }
    return std::move(r).error();
  }
  return true;
}

Status Store::ReadEvents(std::span<const EventId> ids,
                         std::span<const int32_t> columns,
                         std::vector<rootio::Column>* out) {
  const Schema& s = schema();
  if (out->size() != columns.size()) {
    out->clear();
    for (int32_t c : columns) {
      out->push_back(StartColumnFor(s.columns[static_cast<size_t>(c)]));
    }
  }
  if (manifest_.version >= 3) {
    return ReadEventsV3(ids, columns, out);
  }
  std::vector<int32_t> jagged_slots;
  for (int32_t c : columns) {
    if (s.columns[static_cast<size_t>(c)].jagged()) {
      jagged_slots.push_back(s.columns[static_cast<size_t>(c)].slot);
    }
  }
  std::vector<uint8_t> rec_scratch;
  std::vector<uint8_t> block_scratch;
  std::vector<uint64_t> group_first(s.groups());
  std::vector<uint64_t> group_count(s.groups());
  for (const EventId& id : ids) {
    const Resolved at = FERRY_TRY(Resolve(id));
    Shard* shard = at.shard;
    const auto r = static_cast<int64_t>(at.run_slot);
    const auto l = static_cast<int64_t>(at.lumi_slot);
    const uint64_t e = at.event_slot;
    auto where = [&] {
      return "shard " + shard->path() + " > record of event " + id.ToString();
    };
    auto rec = FERRY_TRY_CTX(shard->Bytes(shard->layout().RecordOffset(static_cast<uint64_t>(l), e),
                                          s.record_size, &rec_scratch),
                             where());
    ++counters_.record_reads;
    bool present = FERRY_TRY_CTX(CheckRecord(rec), where());
    RecordHeader h = ReadRecordHeader(rec);
    if (!present || h.event != id.event || h.ordinal >= shard->header().events) {
      return CorruptionError("index record does not match the event array").AddContext(where());
    }
    for (size_t k = 0; k < columns.size(); ++k) {
      const ColumnSpec& c = s.columns[static_cast<size_t>(columns[k])];
      if (!c.jagged()) {
        AppendFixedFromRecord(rec, c, &(*out)[k]);
      }
    }
    if (jagged_slots.empty()) {
      continue;
    }
    // Collections: the event's C block, read once (or not at all when it is cached decoded).
    for (size_t g = 0; g < s.groups(); ++g) {
      group_first[g] = LoadLE<uint32_t>(rec.data() + Schema::GroupOffsetAt(g));
      group_count[g] = RecordUint(rec, s.columns[static_cast<size_t>(s.group_counters[g])]);
    }
    const SectionRef& payload = shard->header().sections[kPayload];
    if (h.cblock_offset < payload.offset || h.cblock_offset > payload.offset + payload.size
        || h.cblock_size > payload.offset + payload.size - h.cblock_offset) {
      return CorruptionError("collection block outside the payload").AddContext(where());
    }
    const BlockCache::Key key{static_cast<uint64_t>(r), h.cblock_offset};
    Chunk block = cache_->Find(key);
    bool complete = block != nullptr;
    for (int32_t j : jagged_slots) {
      complete = complete && block->decoded[static_cast<size_t>(j)];
    }
    if (!complete) {
      block = FERRY_TRY_CTX(
          DecodeBlock(*shard, h.cblock_offset, h.cblock_size, jagged_slots, block, &block_scratch),
          where());
      cache_->Insert(key, block);
    }
    for (size_t k = 0; k < columns.size(); ++k) {
      const ColumnSpec& c = s.columns[static_cast<size_t>(columns[k])];
      if (!c.jagged()) {
        continue;
      }
      const auto j = static_cast<size_t>(c.slot);
      const uint64_t size = block->end[j] - block->begin[j];
      const uint64_t first = group_first[static_cast<size_t>(c.group)] * c.len * c.value_size();
      const uint64_t bytes = group_count[static_cast<size_t>(c.group)] * c.len * c.value_size();
      if (first > size || bytes > size - first) {
        return CorruptionError("column " + c.name + ": the record's elements lie outside the block")
            .AddContext(where());
      }
      rootio::Column& o = (*out)[k];
      const uint8_t* src = block->data.data() + block->begin[j] + first;
      o.bytes.insert(o.bytes.end(), src, src + bytes);
      o.offsets.push_back(o.bytes.size() / c.value_size());
      ++o.num_entries;
    }
  }
  return OkStatus();
}

Result<Chunk> Store::DecodeBlock(Shard& shard,
                                 uint64_t offset,
                                 uint32_t size,
                                 std::span<const int32_t> slots,
                                 const Chunk& previous,
                                 std::vector<uint8_t>* scratch) {
  const Schema& s = schema();
  auto bytes = FERRY_TRY(shard.Bytes(offset, size, scratch));
  ++counters_.block_reads;
  CBlockHeader bh = FERRY_TRY_CTX(ParseCBlockHeader(bytes, size, s, true),
                                  "collection block at " + std::to_string(offset));
  auto out = std::make_shared<DecodedBlock>();
  const size_t nj = s.jagged.size();
  std::vector<bool> want(nj, false);
  for (int32_t j : slots) {
    want[static_cast<size_t>(j)] = true;
  }
  if (previous != nullptr) {
    for (size_t j = 0; j < nj; ++j) {
      want[j] = want[j] || previous->decoded[j];
    }
  }
  out->begin.assign(nj, 0);
  out->end.assign(nj, 0);
  out->decoded = want;
  uint64_t total = 0;
  std::vector<uint64_t> stored_at(nj);
  uint64_t at = bh.header_bytes;
  for (size_t j = 0; j < nj; ++j) {
    stored_at[j] = at;
    at += bh.chunk_sizes[j];
    if (want[j]) {
      const ColumnSpec& c = s.columns[static_cast<size_t>(s.jagged[j])];
      out->begin[j] = total;
      total += uint64_t{bh.group_elements[static_cast<size_t>(c.group)]} * c.len * c.value_size();
      out->end[j] = total;
    }
  }
  out->data.resize(total);
  for (size_t j = 0; j < nj; ++j) {
    if (want[j]) {
      const ColumnSpec& c = s.columns[static_cast<size_t>(s.jagged[j])];
      FERRY_TRY_CTX(
          DecodeChunk(bytes.subspan(stored_at[j], bh.chunk_sizes[j]),
                      std::span(out->data).subspan(out->begin[j], out->end[j] - out->begin[j])),
          "column " + c.name);
    }
  }
  return Chunk(std::move(out));
}

Status Store::DecodeChunk(std::span<const uint8_t> stored, std::span<uint8_t> raw) {
  ++counters_.chunks_decompressed;
  if (stored.size() == raw.size()) {
    if (!raw.empty()) {  // an empty chunk may have no storage at all
      std::memcpy(raw.data(), stored.data(), raw.size());
    }
    return OkStatus();
  }
  if (manifest_.codec.algorithm == codec::Algorithm::kNone || stored.size() > raw.size()) {
    return CorruptionError("chunk of " + std::to_string(stored.size()) + " stored bytes for "
                           + std::to_string(raw.size()) + " raw bytes");
  }
  return codec::DecompressBlock(manifest_.codec.algorithm, stored, raw);
}

Result<Event> Store::ReadEvent(const EventId& id, std::span<const std::string> names) {
  std::vector<int32_t> cols = FERRY_TRY(ResolveColumns(names));
  Event ev;
  ev.id_ = id;
  FERRY_TRY(ReadEvents({&id, 1}, cols, &ev.columns_));
  for (int32_t c : cols) {
    ev.names_.push_back(schema().columns[static_cast<size_t>(c)].name);
  }
  return ev;
}

StoreStats Store::stats() const {
  StoreStats s = counters_;
  s.cache_hits = cache_->hits();
  s.cache_misses = cache_->misses();
  return s;
}

void Store::ResetStats() {
  uint64_t attached = counters_.shards_attached;
  counters_ = {};
  counters_.shards_attached = attached;
}

}  // namespace ferry::store
