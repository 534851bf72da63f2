#include "store/testing/shard_writer.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "base/crc32c.h"
#include "base/endian.h"

namespace ferry::store {
namespace {

constexpr size_t kMinCompressBytes = 256;

}  // namespace

Result<std::unique_ptr<ShardWriter>> ShardWriter::Create(const std::string& path,
                                                         const Manifest& manifest,
                                                         ShardPlan plan) {
  ShardOutput out = FERRY_TRY(ShardOutput::Create(path));
  std::unique_ptr<ShardWriter> w(new ShardWriter(manifest, std::move(plan), std::move(out)));
  ShardHeader& h = w->header_;
  h.version = manifest.version;  // 1 writes no J chunks
  SetPlanFields(w->plan_, &h);
  h.schema_hash = manifest.schema_hash;
  h.lumi_extent = manifest.lumi_extent;
  h.event_extent = manifest.event_extent;
  h.record_size = manifest.schema.record_size;
  h.log2_ks = manifest.log2_ks;
  h.log2_kc = manifest.log2_kc;
  const uint64_t index_at = AlignToPage(FERRY_TRY(w->out_.WriteHead(w->plan_, &h)));
  w->layout_ = FERRY_TRY(Layout::Make(1, h.lumi_extent, h.event_extent, h.record_size, index_at));
  h.sections[kIndex] = {index_at, w->layout_.index_bytes()};
  w->out_.StartPayload(index_at + w->layout_.index_bytes(), &h);
  return w;
}

ShardWriter::ShardWriter(const Manifest& manifest, ShardPlan plan, ShardOutput out)
    : manifest_(manifest),
      schema_(manifest.schema),
      plan_(std::move(plan)),
      out_(std::move(out)),
      ks_(uint64_t{1} << manifest.log2_ks),
      kc_(uint64_t{1} << manifest.log2_kc) {
  s_bufs_.resize(schema_.fixed.size());
  s_dir_.resize(SDirectoryColumns(schema_, manifest.version));
  c_bufs_.resize(schema_.jagged.size());
  j_bufs_.resize(schema_.jagged.size());
  c_group_elements_.assign(schema_.groups(), 0);
  for (size_t i = 0; i < schema_.fixed.size(); ++i) {
    const ColumnSpec& c = schema_.columns[static_cast<size_t>(schema_.fixed[i])];
    s_bufs_[i].reserve(ks_ * c.len * c.value_size());
  }
}

ShardWriter::~ShardWriter() = default;

Status ShardWriter::Add(std::span<const rootio::Column> cols,
                        int64_t row,
                        uint64_t lumi_slot,
                        uint64_t event_slot) {
  if (lumi_slot >= plan_.lumis.size() || event_slot >= plan_.lumis[lumi_slot].count) {
    return InvalidArgumentError("event slot outside the plan");
  }
  const uint64_t event = plan_.event_numbers[plan_.lumis[lumi_slot].first + event_slot];
  const uint32_t rs = schema_.record_size;
  size_t at = pending_.size();
  pending_.resize(at + rs, 0);
  pending_offsets_.push_back(layout_.RecordOffset(lumi_slot, event_slot));
  std::span<uint8_t> rec(pending_.data() + at, rs);
  WriteRecordHeader(rec, {.flags = kRecordPresent, .event = event, .ordinal = events_});
  const auto r = static_cast<size_t>(row);

  // Fixed columns: into the record and the S block.
  for (size_t i = 0; i < schema_.fixed.size(); ++i) {
    const ColumnSpec& c = schema_.columns[static_cast<size_t>(schema_.fixed[i])];
    const rootio::Column& col = cols[static_cast<size_t>(schema_.fixed[i])];
    const size_t n = c.len * c.value_size();
    const uint8_t* src = col.bytes.data() + r * n;
    if (col.bytes.size() < (r + 1) * n) {
      return CorruptionError("column " + c.name + " is shorter than its entries");
    }
    s_bufs_[i].insert(s_bufs_[i].end(), src, src + n);
    if (c.is_bool()) {
      for (uint32_t k = 0; k < c.len; ++k) {
        if (src[k] != 0) {
          uint64_t bit = uint64_t{c.record_offset} + k;
          rec[bit / 8] = static_cast<uint8_t>(rec[bit / 8] | (1u << (bit % 8)));
        }
      }
    } else {
      std::memcpy(rec.data() + c.record_offset, src, n);
    }
  }
  // Jagged columns: element offsets per group, values into the C block.
  for (size_t g = 0; g < schema_.groups(); ++g) {
    StoreLE<uint32_t>(rec.data() + Schema::GroupOffsetAt(g), c_group_elements_[g]);
  }
  std::vector<uint64_t> group_counts(schema_.groups());
  for (size_t g = 0; g < schema_.groups(); ++g) {
    group_counts[g] = cols[static_cast<size_t>(schema_.group_counters[g])].AsUint64(r);
  }
  for (size_t j = 0; j < schema_.jagged.size(); ++j) {
    const ColumnSpec& c = schema_.columns[static_cast<size_t>(schema_.jagged[j])];
    const rootio::Column& col = cols[static_cast<size_t>(schema_.jagged[j])];
    auto [b, e] = col.EntryValues(row);
    const uint64_t want = group_counts[static_cast<size_t>(c.group)] * c.len;
    if (e - b != want) {
      return CorruptionError("column " + c.name + " has " + std::to_string(e - b)
                             + " values in an entry whose counter says " + std::to_string(want));
    }
    const size_t sz = c.value_size();
    c_bufs_[j].insert(c_bufs_[j].end(), col.bytes.data() + b * sz, col.bytes.data() + e * sz);
    if (HasJChunks(manifest_.version)) {
      j_bufs_[j].insert(j_bufs_[j].end(), col.bytes.data() + b * sz, col.bytes.data() + e * sz);
    }
  }
  for (size_t g = 0; g < schema_.groups(); ++g) {
    uint64_t total = c_group_elements_[g] + group_counts[g];
    if (total > UINT32_MAX / 8) {
      return UnsupportedError(
          "a collection block holds too many elements; use a smaller --block-size");
    }
    c_group_elements_[g] = static_cast<uint32_t>(total);
  }
  ++events_;
  ++c_events_;
  ++s_events_;
  if (c_events_ == kc_) {
    FERRY_TRY(FlushC());
  }
  if (s_events_ == ks_) {
    FERRY_TRY(FlushS());
  }
  return OkStatus();
}

Result<uint32_t> ShardWriter::Compress(std::span<const uint8_t> raw, ByteVector* out) {
  size_t at = out->size();
  // Compressed only when that saves at least a quarter: a tiny or incompressible chunk is
  // cheaper to copy than to decode, and one event's pick decodes a whole block of them.
  if (manifest_.codec.algorithm != codec::Algorithm::kNone && raw.size() >= kMinCompressBytes) {
    size_t n = FERRY_TRY(codec::CompressBlock(manifest_.codec, raw, out));
    if (n + raw.size() / 4 < raw.size()) {
      stats_.raw_bytes += raw.size();
      return static_cast<uint32_t>(n);
    }
    out->resize(at);
  }
  out->insert(out->end(), raw.data(), raw.data() + raw.size());
  stats_.raw_bytes += raw.size();
  return static_cast<uint32_t>(raw.size());
}

Status ShardWriter::FlushC() {
  if (c_events_ == 0) {
    return OkStatus();
  }
  if (!schema_.jagged.empty()) {
    ByteVector& block = scratch_;
    block.resize(CBlockHeaderBytes(schema_.groups(), schema_.jagged.size()));
    std::memset(block.data(), 0, block.size());
    StoreLE<uint32_t>(block.data() + 4, c_events_);
    for (size_t g = 0; g < schema_.groups(); ++g) {
      StoreLE<uint32_t>(block.data() + 8 + 4 * g, c_group_elements_[g]);
    }
    const size_t sizes_at = 8 + 4 * schema_.groups();
    for (size_t j = 0; j < schema_.jagged.size(); ++j) {
      uint32_t n = FERRY_TRY(Compress(c_bufs_[j], &block));
      StoreLE<uint32_t>(block.data() + sizes_at + 4 * j, n);
      c_bufs_[j].clear();
    }
    if (block.size() > UINT32_MAX) {
      return UnsupportedError("collection block over 4 GiB; use a smaller --block-size");
    }
    StoreLE<uint32_t>(block.data(), crc32c::Value(block.data() + 4, block.size() - 4));
    const uint64_t offset = out_.end();
    const auto size = static_cast<uint32_t>(block.size());
    FERRY_TRY(out_.Append(block));
    AppendCBlockRef(c_table_, {offset, size, c_events_});
    for (size_t k = 0; k < pending_offsets_.size(); ++k) {
      std::span<uint8_t> rec(pending_.data() + k * schema_.record_size, schema_.record_size);
      StoreLE<uint64_t>(rec.data() + 24, offset);
      StoreLE<uint32_t>(rec.data() + 32, size);
    }
    ++stats_.c_blocks;
  } else {
    AppendCBlockRef(c_table_, {0, 0, c_events_});
  }
  std::fill(c_group_elements_.begin(), c_group_elements_.end(), 0);
  c_events_ = 0;
  return WriteRecords();
}

Status ShardWriter::WriteRecords() {
  const uint32_t rs = schema_.record_size;
  const size_t n = pending_offsets_.size();
  for (size_t k = 0; k < n; ++k) {
    SealRecord({pending_.data() + k * rs, rs});
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return pending_offsets_[a] < pending_offsets_[b]; });
  RecordRuns runs(out_.fd());
  for (size_t k : order) {
    std::span<uint8_t> rec = FERRY_TRY_CTX(runs.Next(pending_offsets_[k], rs), out_.path());
    std::memcpy(rec.data(), pending_.data() + k * rs, rs);
  }
  FERRY_TRY_CTX(runs.Flush(), out_.path());
  pending_.clear();
  pending_offsets_.clear();
  return OkStatus();
}

Status ShardWriter::FlushS() {
  if (s_events_ == 0) {
    return OkStatus();
  }
  ByteVector& chunk = scratch_;
  for (size_t i = 0; i < schema_.fixed.size(); ++i) {
    chunk.clear();
    uint32_t n = FERRY_TRY(Compress(s_bufs_[i], &chunk));
    s_dir_[i].push_back({out_.end(), n, crc32c::Value(chunk)});
    FERRY_TRY(out_.Append(chunk));
    s_bufs_[i].clear();
    ++stats_.s_chunks;
  }
  // J chunks: each collection column's values of the S block, for scans.
  for (size_t j = 0; HasJChunks(manifest_.version) && j < schema_.jagged.size(); ++j) {
    chunk.clear();
    uint32_t n = FERRY_TRY(Compress(j_bufs_[j], &chunk));
    s_dir_[schema_.fixed.size() + j].push_back({out_.end(), n, crc32c::Value(chunk)});
    FERRY_TRY(out_.Append(chunk));
    j_bufs_[j].clear();
    ++stats_.j_chunks;
  }
  s_events_ = 0;
  return OkStatus();
}

Result<ShardWriteStats> ShardWriter::Finish() {
  if (finished_) {
    return InvalidArgumentError("shard already finished");
  }
  finished_ = true;
  FERRY_TRY(CheckPlanComplete(plan_, events_));
  FERRY_TRY(FlushC());
  FERRY_TRY(FlushS());
  FERRY_TRY(out_.WriteTail(s_dir_, c_table_, &header_));
  FERRY_TRY(out_.Close());
  stats_.stored_bytes = out_.appended();
  stats_.bytes = out_.end();
  return stats_;
}

}  // namespace ferry::store
