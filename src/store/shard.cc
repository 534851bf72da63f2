#include "store/shard.h"

#include <algorithm>
#include <cstring>

#include "base/crc32c.h"
#include "base/endian.h"
#include "io/local_source.h"

namespace ferry::store {
namespace {

constexpr uint64_t kEagerNumbersBytes = 16u << 20;

}  // namespace

Result<std::unique_ptr<Shard>> Shard::Attach(const std::string& path,
                                             const Manifest& manifest,
                                             size_t run_slot,
                                             IoMode mode,
                                             const SourceOpener& open,
                                             StoreStats* counters) {
  std::unique_ptr<Shard> s(new Shard());
  s->path_ = path;
  s->manifest_ = &manifest;
  s->counters_ = counters;
  if (open) {
    s->source_ = FERRY_TRY(open(path, mode));
  } else {
    s->source_ = FERRY_TRY(
        io::OpenLocal(path, mode == IoMode::kMmap ? io::LocalMode::kMmap : io::LocalMode::kPread));
  }
  // Zero-copy only where the source can map (a remote store always reads).
  s->mmap_ = mode == IoMode::kMmap && s->source_->View(0, 0).has_value();
  const uint64_t size = s->source_->size();
  std::vector<uint8_t> scratch;
  auto head =
      FERRY_TRY_CTX(s->Bytes(0, std::min<uint64_t>(size, kShardHeaderSize), &scratch), path);
  s->header_ = FERRY_TRY_CTX(ShardHeader::Parse(head, size), "shard " + path);
  const ShardHeader& h = s->header_;
  const RunEntry& run = manifest.runs[run_slot];
  // A version-3 run's slot is its place in the current manifest, which appends of smaller run
  // numbers shift: the header's run_slot only records the slot at writing, and is not checked.
  if (h.version != manifest.version || h.run != run.run || (h.version < 3 && h.run_slot != run_slot)
      || h.schema_hash != manifest.schema_hash || h.lumi_extent != run.lumi_extent
      || h.event_extent != run.event_extent || h.record_size != manifest.record_size()
      || h.log2_ks != manifest.log2_ks || h.log2_kc != manifest.log2_kc || h.events != run.events
      || h.lumis != run.lumis || (h.version >= 3 && h.j_chunks() != manifest.j_chunks())) {
    return CorruptionError("shard " + path + " does not belong to this manifest (run "
                           + std::to_string(h.run) + ", expected " + std::to_string(run.run) + ")");
  }
  s->layout_ = FERRY_TRY_CTX(
      Layout::Make(1, h.lumi_extent, h.event_extent, h.record_size, h.sections[kIndex].offset),
      path);
  // Lumi table and (when small) the event numbers in one request.
  const SectionRef& lt = h.sections[kLumiTable];
  const SectionRef& en = h.sections[kEventNumbers];
  std::vector<std::pair<uint64_t, size_t>> ranges = {{lt.offset, lt.size}};
  const bool eager = en.size <= kEagerNumbersBytes;
  if (eager) {
    ranges.emplace_back(en.offset, en.size);
  }
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<std::span<const uint8_t>> got;
  FERRY_TRY_CTX(s->BytesV(ranges, &bufs, &got), path);
  if (eager) {
    s->numbers_tried_ = true;
    ++counters->number_reads;
    if (crc32c::Value(got[1]) != h.crc_event_numbers) {
      return CorruptionError("shard " + path + ": event-number checksum mismatch");
    }
    s->numbers_.resize(h.events);
    std::memcpy(s->numbers_.data(), got[1].data(), got[1].size());
  }
  auto table = got[0];
  if (crc32c::Value(table) != h.crc_lumi_table) {
    return CorruptionError("shard " + path + ": lumi table checksum mismatch");
  }
  s->lumis_ = FERRY_TRY_CTX(ParseLumiTable(table, h.events, h.event_extent), "shard " + path);
  const uint64_t lo = s->lumis_.front().lumi;
  const uint64_t width = s->lumis_.back().lumi - lo;
  if (width < 4 * s->lumis_.size() + 1024) {
    s->lumi_base_ = lo;
    s->lumi_direct_.assign(width + 1, -1);
    for (size_t i = 0; i < s->lumis_.size(); ++i) {
      s->lumi_direct_[s->lumis_[i].lumi - lo] = static_cast<int32_t>(i);
    }
  }
  s->s_dir_.resize(s->s_dir_columns());
  ++counters->shards_attached;
  return s;
}

Result<std::span<const uint8_t>> Shard::Bytes(uint64_t offset,
                                              size_t size,
                                              std::vector<uint8_t>* scratch) {
  counters_->bytes += size;
  if (mmap_) {
    auto view = source_->View(offset, size);
    if (!view) {
      return CorruptionError("range [" + std::to_string(offset) + ", +" + std::to_string(size)
                             + ") is past the end of " + path_ + " (truncated?)");
    }
    ++counters_->views;
    return *view;
  }
  scratch->resize(size);
  ++counters_->reads;
  ++counters_->requests;
  Status st = source_->ReadAt(offset, *scratch);
  if (!st.has_value()) {
    if (st.error().code() == ErrorCode::kShortRead) {
      return CorruptionError(st.error().message() + " (truncated?)");
    }
    return std::move(st).error();
  }
  return std::span<const uint8_t>(*scratch);
}

Status Shard::BytesV(std::span<const std::pair<uint64_t, size_t>> ranges,
                     std::vector<std::vector<uint8_t>>* scratch,
                     std::vector<std::span<const uint8_t>>* out) {
  out->resize(ranges.size());
  if (mmap_) {
    for (size_t i = 0; i < ranges.size(); ++i) {
      (*out)[i] = FERRY_TRY(Bytes(ranges[i].first, ranges[i].second, nullptr));
    }
    return OkStatus();
  }
  scratch->resize(ranges.size());
  std::vector<io::ReadRequest> reqs(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    (*scratch)[i].resize(ranges[i].second);
    reqs[i].offset = ranges[i].first;
    reqs[i].dest = (*scratch)[i];
    counters_->bytes += ranges[i].second;
    (*out)[i] = (*scratch)[i];
  }
  counters_->reads += ranges.size();
  ++counters_->requests;
  Status st = source_->ReadV(reqs);
  if (!st.has_value()) {
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (!reqs[i].status.has_value()) {
        Error e = reqs[i].status.error();
        if (e.code() == ErrorCode::kShortRead) {
          return CorruptionError(e.message() + " (truncated?)");
        }
        return std::move(e).AddContext("range [" + std::to_string(ranges[i].first) + ", +"
                                       + std::to_string(ranges[i].second) + ") of " + path_);
      }
    }
    return st;
  }
  return OkStatus();
}

int64_t Shard::LumiSlot(uint64_t lumi) const {
  if (!lumi_direct_.empty()) {
    if (lumi < lumi_base_ || lumi - lumi_base_ >= lumi_direct_.size()) {
      return -1;
    }
    return lumi_direct_[lumi - lumi_base_];
  }
  auto it = std::lower_bound(lumis_.begin(), lumis_.end(), lumi,
                             [](const LumiEntry& e, uint64_t l) { return e.lumi < l; });
  return it != lumis_.end() && it->lumi == lumi ? it - lumis_.begin() : -1;
}

Result<std::span<const uint64_t>> Shard::EventNumbers(size_t lumi_slot) {
  const LumiEntry& l = lumis_[lumi_slot];
  const SectionRef& sec = header_.sections[kEventNumbers];
  if (!numbers_tried_) {
    // A small section comes in with one read (and its CRC checked) on first use.
    numbers_tried_ = true;
    if (sec.size <= kEagerNumbersBytes) {
      std::vector<uint8_t> scratch;
      auto nums = FERRY_TRY(Bytes(sec.offset, sec.size, &scratch));
      ++counters_->number_reads;
      if (crc32c::Value(nums) != header_.crc_event_numbers) {
        return CorruptionError("shard " + path_ + ": event-number checksum mismatch");
      }
      numbers_.resize(header_.events);
      std::memcpy(numbers_.data(), nums.data(), nums.size());
    }
  }
  if (!numbers_.empty()) {
    return std::span<const uint64_t>(numbers_).subspan(l.first, l.count);
  }
  auto it = lumi_numbers_.find(lumi_slot);
  if (it == lumi_numbers_.end()) {
    std::vector<uint8_t> scratch;
    auto bytes = FERRY_TRY(Bytes(sec.offset + 8 * l.first, 8 * size_t{l.count}, &scratch));
    ++counters_->number_reads;
    std::vector<uint64_t> nums(l.count);
    std::memcpy(nums.data(), bytes.data(), bytes.size());
    if (!std::is_sorted(nums.begin(), nums.end())) {
      return CorruptionError("shard " + path_ + ": event numbers of lumi " + std::to_string(l.lumi)
                             + " are not sorted");
    }
    it = lumi_numbers_.emplace(lumi_slot, std::move(nums)).first;
  }
  return std::span<const uint64_t>(it->second);
}

size_t Shard::s_dir_columns() const {
  return SDirectoryColumns(manifest_->schema, header_.version, header_.flags);
}

Status Shard::LoadSDirectory(std::span<const size_t> slots) {
  const ShardHeader& h = header_;
  const uint64_t n = h.s_blocks();
  if (h.sections[kSDirectory].size != s_dir_columns() * n * kSDirEntryBytes) {
    return CorruptionError("shard " + path_ + ": S directory size does not match the schema");
  }
  std::vector<size_t> want;
  std::vector<std::pair<uint64_t, size_t>> ranges;
  for (size_t slot : slots) {
    if (slot < s_dir_.size() && s_dir_[slot].empty() && n > 0
        && std::find(want.begin(), want.end(), slot) == want.end()) {
      want.push_back(slot);
      ranges.emplace_back(h.sections[kSDirectory].offset + slot * n * kSDirEntryBytes,
                          n * kSDirEntryBytes);
    }
  }
  if (want.empty()) {
    return OkStatus();
  }
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<std::span<const uint8_t>> got;
  FERRY_TRY(BytesV(ranges, &bufs, &got));
  for (size_t i = 0; i < want.size(); ++i) {
    s_dir_[want[i]].assign(got[i].begin(), got[i].end());
  }
  return OkStatus();
}

Result<std::vector<uint64_t>> Shard::AllEventNumbers() {
  const SectionRef& sec = header_.sections[kEventNumbers];
  std::vector<uint8_t> scratch;
  auto bytes = FERRY_TRY(Bytes(sec.offset, sec.size, &scratch));
  if (crc32c::Value(bytes) != header_.crc_event_numbers) {
    return CorruptionError("event-number checksum mismatch");
  }
  std::vector<uint64_t> nums(header_.events);
  std::memcpy(nums.data(), bytes.data(), bytes.size());
  for (const LumiEntry& l : lumis_) {
    for (uint64_t i = 1; i < l.count; ++i) {
      if (nums[l.first + i] <= nums[l.first + i - 1]) {
        return CorruptionError("event numbers of lumi " + std::to_string(l.lumi)
                               + " are not ascending");
      }
    }
  }
  return nums;
}

Status Shard::CheckDirectories() {
  const ShardHeader& h = header_;
  const uint64_t want_s = s_dir_columns() * h.s_blocks() * kSDirEntryBytes;
  if (h.sections[kSDirectory].size != want_s) {
    return CorruptionError("S directory has " + std::to_string(h.sections[kSDirectory].size)
                           + " bytes, expected " + std::to_string(want_s));
  }
  std::vector<uint8_t> scratch;
  auto s = FERRY_TRY(Bytes(h.sections[kSDirectory].offset, h.sections[kSDirectory].size, &scratch));
  if (crc32c::Value(s) != h.crc_s_directory) {
    return CorruptionError("S directory checksum mismatch");
  }
  return LoadCTable();
}

Status Shard::LoadCTable() {
  if (c_table_loaded_) {
    return OkStatus();
  }
  std::vector<uint8_t> scratch;
  const ShardHeader& h = header_;
  auto c = FERRY_TRY(Bytes(h.sections[kCTable].offset, h.sections[kCTable].size, &scratch));
  if (crc32c::Value(c) != h.crc_c_table) {
    return CorruptionError("shard " + path_ + ": C table checksum mismatch");
  }
  c_table_.assign(c.begin(), c.end());
  c_table_loaded_ = true;
  return OkStatus();
}

Result<ChunkRef> Shard::SChunk(size_t fixed_slot, uint64_t block) {
  const ShardHeader& h = header_;
  const uint64_t n = h.s_blocks();
  if (fixed_slot >= s_dir_.size()
      || h.sections[kSDirectory].size != s_dir_columns() * n * kSDirEntryBytes) {
    return CorruptionError("shard " + path_ + ": S directory size does not match the schema");
  }
  std::vector<uint8_t>& slice = s_dir_[fixed_slot];
  if (slice.empty()) {
    std::vector<uint8_t> scratch;
    auto b = FERRY_TRY(Bytes(h.sections[kSDirectory].offset + fixed_slot * n * kSDirEntryBytes,
                             n * kSDirEntryBytes, &scratch));
    slice.assign(b.begin(), b.end());
  }
  ChunkRef r = ParseChunkRef(std::span(slice).subspan(block * kSDirEntryBytes, kSDirEntryBytes));
  const SectionRef& p = h.sections[kPayload];
  if (r.offset < p.offset || r.offset > p.offset + p.size
      || r.size > p.offset + p.size - r.offset) {
    return CorruptionError("shard " + path_ + ": S chunk " + std::to_string(block)
                           + " of column slot " + std::to_string(fixed_slot)
                           + " lies outside the payload");
  }
  return r;
}

Result<CBlockRef> Shard::CBlock(uint64_t block) {
  FERRY_TRY(LoadCTable());
  CBlockRef r =
      ParseCBlockRef(std::span(c_table_).subspan(block * kCTableEntryBytes, kCTableEntryBytes));
  const SectionRef& p = header_.sections[kPayload];
  if ((r.size > 0
       && (r.offset < p.offset || r.offset > p.offset + p.size
           || r.size > p.offset + p.size - r.offset))
      || r.events == 0 || r.events > (uint64_t{1} << header_.log2_kc)) {
    return CorruptionError("shard " + path_ + ": C table entry " + std::to_string(block)
                           + " is inconsistent");
  }
  return r;
}

}  // namespace ferry::store
