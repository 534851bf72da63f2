#include "store/shard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>

#include "base/crc32c.h"
#include "base/endian.h"

namespace ferry::store {
namespace {

constexpr uint64_t kAlign = 4096;
constexpr size_t kOutFlushBytes = 8u << 20;
constexpr size_t kMinCompressBytes = 256;

uint64_t AlignUp(uint64_t v) {
  return (v + kAlign - 1) & ~(kAlign - 1);
}

}  // namespace

Result<std::unique_ptr<ShardWriter>> ShardWriter::Create(const std::string& path,
                                                         const Manifest& manifest,
                                                         ShardPlan plan) {
  Fd fd = FERRY_TRY(Fd::Open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
  std::unique_ptr<ShardWriter> w(new ShardWriter(manifest, std::move(plan), std::move(fd), path));
  ShardHeader& h = w->header_;
  h.version = manifest.version;  // 1 writes no J chunks (kept for compatibility tests)
  h.run = w->plan_.run;
  h.run_slot = w->plan_.run_slot;
  h.schema_hash = manifest.schema_hash;
  h.lumi_extent = manifest.lumi_extent;
  h.event_extent = manifest.event_extent;
  h.record_size = manifest.schema.record_size;
  h.log2_ks = manifest.log2_ks;
  h.log2_kc = manifest.log2_kc;
  h.events = w->plan_.event_numbers.size();
  h.lumis = w->plan_.lumis.size();

  std::vector<uint8_t> lumi_table;
  for (const LumiEntry& e : w->plan_.lumis) {
    AppendLumiEntry(lumi_table, e);
  }
  std::vector<uint8_t> numbers(w->plan_.event_numbers.size() * 8);
  for (size_t i = 0; i < w->plan_.event_numbers.size(); ++i) {
    StoreLE<uint64_t>(numbers.data() + 8 * i, w->plan_.event_numbers[i]);
  }
  h.sections[kLumiTable] = {kShardHeaderSize, lumi_table.size()};
  h.sections[kEventNumbers] = {kShardHeaderSize + lumi_table.size(), numbers.size()};
  h.crc_lumi_table = crc32c::Value(lumi_table);
  h.crc_event_numbers = crc32c::Value(numbers);
  uint64_t index_at = AlignUp(h.sections[kEventNumbers].offset + numbers.size());
  w->layout_ = FERRY_TRY(Layout::Make(1, h.lumi_extent, h.event_extent, h.record_size, index_at));
  h.sections[kIndex] = {index_at, w->layout_.index_bytes()};
  w->end_ = AlignUp(index_at + w->layout_.index_bytes());
  w->out_at_ = w->end_;
  h.sections[kPayload].offset = w->end_;
  FERRY_TRY_CTX(PwriteFull(w->fd_.get(), lumi_table.data(), lumi_table.size(), kShardHeaderSize),
                path);
  FERRY_TRY_CTX(
      PwriteFull(w->fd_.get(), numbers.data(), numbers.size(), h.sections[kEventNumbers].offset),
      path);
  return w;
}

ShardWriter::ShardWriter(const Manifest& manifest, ShardPlan plan, Fd fd, std::string path)
    : manifest_(manifest),
      schema_(manifest.schema),
      plan_(std::move(plan)),
      fd_(std::move(fd)),
      path_(std::move(path)),
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
    const uint64_t offset = end_;
    const auto size = static_cast<uint32_t>(block.size());
    FERRY_TRY(Append(block));
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
  // Records of consecutive slots go out in one write (sorted input is one write per block).
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return pending_offsets_[a] < pending_offsets_[b]; });
  std::vector<uint8_t> run;
  uint64_t run_at = 0;
  for (size_t k = 0; k <= n; ++k) {
    bool extend = k < n && !run.empty() && pending_offsets_[order[k]] == run_at + run.size();
    if (!extend && !run.empty()) {
      FERRY_TRY_CTX(PwriteFull(fd_.get(), run.data(), run.size(), run_at), path_);
      run.clear();
    }
    if (k == n) {
      break;
    }
    if (run.empty()) {
      run_at = pending_offsets_[order[k]];
    }
    const uint8_t* p = pending_.data() + order[k] * rs;
    run.insert(run.end(), p, p + rs);
  }
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
    s_dir_[i].push_back({end_, n, crc32c::Value(chunk)});
    FERRY_TRY(Append(chunk));
    s_bufs_[i].clear();
    ++stats_.s_chunks;
  }
  // J chunks: each collection column's values of the S block, for scans.
  for (size_t j = 0; HasJChunks(manifest_.version) && j < schema_.jagged.size(); ++j) {
    chunk.clear();
    uint32_t n = FERRY_TRY(Compress(j_bufs_[j], &chunk));
    s_dir_[schema_.fixed.size() + j].push_back({end_, n, crc32c::Value(chunk)});
    FERRY_TRY(Append(chunk));
    j_bufs_[j].clear();
    ++stats_.j_chunks;
  }
  s_events_ = 0;
  return OkStatus();
}

Status ShardWriter::Append(std::span<const uint8_t> bytes) {
  out_.insert(out_.end(), bytes.begin(), bytes.end());
  end_ += bytes.size();
  stats_.stored_bytes += bytes.size();
  if (out_.size() >= kOutFlushBytes) {
    return FlushOut();
  }
  return OkStatus();
}

Status ShardWriter::FlushOut() {
  if (!out_.empty()) {
    FERRY_TRY_CTX(PwriteFull(fd_.get(), out_.data(), out_.size(), out_at_), path_);
    out_at_ += out_.size();
    out_.clear();
  }
  return OkStatus();
}

Result<ShardWriteStats> ShardWriter::Finish() {
  if (finished_) {
    return InvalidArgumentError("shard already finished");
  }
  finished_ = true;
  if (events_ != plan_.event_numbers.size()) {
    return CorruptionError("run " + std::to_string(plan_.run) + ": " + std::to_string(events_)
                           + " events written, the plan has "
                           + std::to_string(plan_.event_numbers.size()));
  }
  FERRY_TRY(FlushC());
  FERRY_TRY(FlushS());
  FERRY_TRY(FlushOut());
  FERRY_TRY(WriteShardTail(fd_.get(), path_, s_dir_, c_table_, &header_, &end_));
  FERRY_TRY_CTX(fd_.Close(), path_);
  stats_.bytes = end_;
  return stats_;
}

Status WriteShardTail(int fd,
                      const std::string& path,
                      const std::vector<std::vector<ChunkRef>>& s_dir,
                      std::span<const uint8_t> table,
                      ShardHeader* h,
                      uint64_t* end) {
  h->sections[kPayload].size = *end - h->sections[kPayload].offset;
  std::vector<uint8_t> tail;
  for (const auto& column : s_dir) {
    for (const ChunkRef& r : column) {
      AppendChunkRef(tail, r);
    }
  }
  h->sections[kSDirectory] = {*end, tail.size()};
  h->crc_s_directory = crc32c::Value(tail);
  h->sections[kCTable] = {*end + tail.size(), table.size()};
  h->crc_c_table = crc32c::Value(table);
  tail.insert(tail.end(), table.begin(), table.end());
  FERRY_TRY_CTX(PwriteFull(fd, tail.data(), tail.size(), *end), path);
  *end += tail.size();
  // The index region may end in padding slots that were never written.
  if (::ftruncate(fd, static_cast<off_t>(*end)) != 0) {
    return IoError("ftruncate " + path, errno);
  }
  std::vector<uint8_t> head = h->Serialize();
  FERRY_TRY_CTX(PwriteFull(fd, head.data(), head.size(), 0), path);
  if (::fsync(fd) != 0) {
    return IoError("fsync " + path, errno);
  }
  return OkStatus();
}

}  // namespace ferry::store
