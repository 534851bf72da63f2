#include "store/shard_builder.h"

#include <algorithm>
#include <cstring>

#include "base/crc32c.h"
#include "base/endian.h"
#include "store/counts.h"
#include "store/shuffle.h"

namespace ferry::store {
namespace {

constexpr size_t kMinCompressBytes = 64;

void AppendBytes(std::vector<uint8_t>& dst, const uint8_t* src, size_t n) {
  dst.insert(dst.end(), src, src + n);
}

// Compresses raw into *out (after its current size) unless the codec is none or compression
// does not shrink it; then decompresses the result again and compares it with raw, so a codec
// fault is caught before anything is written. Returns the stored size.
Result<size_t> CompressVerified(const codec::Setting& setting,
                                std::span<const uint8_t> raw,
                                ByteVector* out,
                                ByteVector* check,
                                const Dictionary* dict = nullptr) {
  const size_t at = out->size();
  if (setting.algorithm != codec::Algorithm::kNone && raw.size() >= kMinCompressBytes) {
    size_t n = dict != nullptr ? FERRY_TRY(dict->Compress(raw, out))
                               : FERRY_TRY(codec::CompressBlock(setting, raw, out));
    if (n < raw.size()) {
      check->resize(raw.size());
      auto stored = std::span<const uint8_t>(*out).subspan(at, n);
      FERRY_TRY_CTX(dict != nullptr ? dict->Decompress(stored, *check)
                                    : codec::DecompressBlock(setting.algorithm, stored, *check),
                    "verifying a compressed block");
      if (std::memcmp(check->data(), raw.data(), raw.size()) != 0) {
        return CorruptionError("a compressed block does not decompress to its input");
      }
      return n;
    }
    out->resize(at);
  }
  out->insert(out->end(), raw.begin(), raw.end());
  return raw.size();
}

}  // namespace

// One unit of work for the pool: an E block or an S block. Buffers are reused across jobs.
struct ShardBuilder::Job {
  enum Kind { kE, kS } kind = kE;
  // S block input, unshuffled: one buffer per S-directory column. (An E job arrives with its
  // payload already shuffled.)
  std::vector<std::vector<uint8_t>> columns;
  uint32_t events = 0;
  std::vector<PendingRecord> records;
  // Output: the stored bytes (E: header + payload; S: chunks back to back) and chunk sizes.
  ByteVector stored;
  std::vector<uint32_t> chunk_sizes;
  std::vector<uint32_t> chunk_crcs;
  ByteVector shuffled;
  ByteVector check;
  uint64_t raw_bytes = 0;
  Status status;
  TaskPool::Ticket ticket;
};

Result<std::unique_ptr<ShardBuilder>> ShardBuilder::Create(const std::string& path,
                                                           const Manifest& manifest,
                                                           ShardPlan plan,
                                                           TaskPool* pool,
                                                           const Dictionary* dict) {
  if (plan.event_numbers.size() > UINT32_MAX) {
    return UnsupportedError("run " + std::to_string(plan.run) + " has more than 2^32 events");
  }
  ShardOutput out = FERRY_TRY(ShardOutput::Create(path));
  std::unique_ptr<ShardBuilder> w(
      new ShardBuilder(manifest, std::move(plan), std::move(out), pool));
  w->dict_ = dict;
  ShardHeader& h = w->header_;
  h.version = kFormatVersion;
  SetPlanFields(w->plan_, &h);
  h.schema_hash = manifest.schema_hash;
  h.lumi_extent = w->plan_.lumis.size();
  h.event_extent = 0;
  for (const LumiEntry& l : w->plan_.lumis) {
    h.event_extent = std::max<uint64_t>(h.event_extent, l.count);
  }
  h.record_size = kRecordV3Bytes;
  h.log2_ks = manifest.log2_ks;
  h.log2_kc = manifest.log2_kc;
  h.flags = w->j_chunks_ ? kShardFlagJChunks : 0;
  // The index follows the event numbers directly: 24-byte records need no page alignment, and
  // a small run's whole head (header, tables, index) is then one contiguous read.
  const uint64_t index_at = FERRY_TRY(w->out_.WriteHead(w->plan_, &h));
  w->layout_ = FERRY_TRY(Layout::Make(1, h.lumi_extent, h.event_extent, kRecordV3Bytes, index_at));
  h.sections[kIndex] = {index_at, w->layout_.index_bytes()};
  w->out_.StartPayload(index_at + w->layout_.index_bytes(), &h);
  return w;
}

ShardBuilder::ShardBuilder(const Manifest& manifest,
                           ShardPlan plan,
                           ShardOutput out,
                           TaskPool* pool)
    : manifest_(manifest),
      schema_(manifest.schema),
      plan_(std::move(plan)),
      out_(std::move(out)),
      pool_(pool),
      ks_(uint64_t{1} << manifest.log2_ks),
      kc_(uint64_t{1} << manifest.log2_kc),
      j_chunks_((manifest.flags & kManifestFlagJChunks) != 0) {
  e_bufs_.resize(schema_.columns.size());
  e_group_elements_.assign(schema_.groups(), 0);
  const size_t s_cols = schema_.fixed.size() + (j_chunks_ ? schema_.jagged.size() : 0);
  s_bufs_.resize(s_cols);
  s_dir_.resize(s_cols);
}

ShardBuilder::~ShardBuilder() {
  // Jobs still on the pool reference this builder's buffers only through their Job objects,
  // which are owned here: wait for them before those go away.
  for (auto& j : jobs_) {
    j->ticket.Wait();
  }
}

Status ShardBuilder::Add(std::span<const rootio::Column> cols,
                         int64_t row,
                         size_t n,
                         std::span<const EventSlot> slots) {
  size_t done = 0;
  while (done < n) {
    // The largest piece that stays inside the open S block: its E blocks, then its S staging
    // in one append per column (not one per E block).
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n - done, ks_ - s_events_));
    const int64_t r0 = row + static_cast<int64_t>(done);
    FERRY_TRY(AddEBlocks(cols, r0, k, slots.subspan(done, k)));
    FERRY_TRY(StageS(cols, r0, k));
    s_events_ += k;
    done += k;
    if (s_events_ == ks_) {
      FERRY_TRY(FlushS());
    }
  }
  return OkStatus();
}

Status ShardBuilder::AddEBlocks(std::span<const rootio::Column> cols,
                                int64_t row,
                                size_t n,
                                std::span<const EventSlot> slots) {
  size_t done = 0;
  while (done < n) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n - done, kc_ - e_events_));
    const int64_t r0 = row + static_cast<int64_t>(done);
    FERRY_TRY(QueueRecords(slots.subspan(done, k)));
    FERRY_TRY(CheckPiece(cols, r0, k));
    if (e_events_ == 0 && k == kc_) {
      // A whole E block in one piece (the usual case): shuffled straight from the decoded
      // columns into the job's payload, with no staging copy.
      FERRY_TRY(FlushEFrom(cols, r0, k));
    } else {
      for (size_t c = 0; c < schema_.columns.size(); ++c) {
        const std::span<const uint8_t> v = ValuesOf(cols[c], schema_.columns[c], r0, k);
        AppendBytes(e_bufs_[c], v.data(), v.size());
      }
      for (size_t g = 0; g < schema_.groups(); ++g) {
        e_group_elements_[g] += static_cast<uint32_t>(piece_elements_[g]);
      }
      e_events_ += k;
      if (e_events_ == kc_) {
        FERRY_TRY(FlushE());
      }
    }
    events_ += k;
    done += k;
  }
  return OkStatus();
}

Status ShardBuilder::QueueRecords(std::span<const EventSlot> slots) {
  for (size_t i = 0; i < slots.size(); ++i) {
    const EventSlot& s = slots[i];
    if (s.lumi_slot >= plan_.lumis.size() || s.event_slot >= plan_.lumis[s.lumi_slot].count) {
      return InvalidArgumentError("event slot outside the plan");
    }
    const uint64_t event = plan_.event_numbers[plan_.lumis[s.lumi_slot].first + s.event_slot];
    e_records_.push_back({layout_.RecordOffset(s.lumi_slot, s.event_slot),
                          static_cast<uint32_t>(events_ + i), static_cast<uint32_t>(event)});
  }
  return OkStatus();
}

std::span<const uint8_t> ShardBuilder::ValuesOf(const rootio::Column& col,
                                                const ColumnSpec& spec,
                                                int64_t row,
                                                size_t n) {
  const size_t w = spec.value_size();
  auto [b, x] = col.EntryValues(row);
  auto [y, e] = col.EntryValues(row + static_cast<int64_t>(n) - 1);
  (void)x;
  (void)y;
  return {col.bytes.data() + b * w, (e - b) * w};
}

// The checks of a piece of rows [row, row + n), before any of it is used: every column long
// enough, every collection column holding what its counter says (summed once per collection,
// into piece_elements_), and the E block's element totals within bounds.
Status ShardBuilder::CheckPiece(std::span<const rootio::Column> cols, int64_t row, size_t n) {
  piece_elements_.resize(schema_.groups());
  for (size_t g = 0; g < schema_.groups(); ++g) {
    const rootio::Column& counts = cols[static_cast<size_t>(schema_.group_counters[g])];
    piece_elements_[g] = SumCounts(
        counts.bytes.data() + static_cast<size_t>(row) * counts.value_size(), counts.type, n);
    if (e_group_elements_[g] + piece_elements_[g] > UINT32_MAX / 8) {
      return UnsupportedError("an E block holds too many elements; use a smaller --block-size");
    }
  }
  for (size_t c = 0; c < schema_.columns.size(); ++c) {
    const ColumnSpec& spec = schema_.columns[c];
    const rootio::Column& col = cols[c];
    auto [b, x] = col.EntryValues(row);
    auto [y, e] = col.EntryValues(row + static_cast<int64_t>(n) - 1);
    (void)x;
    (void)y;
    if (col.bytes.size() < e * spec.value_size()) {
      return CorruptionError("column " + spec.name + " is shorter than its entries");
    }
    if (!spec.jagged()) {
      continue;
    }
    // Checked over the piece: a per-event check would cost more than the copy.
    const uint64_t want = piece_elements_[static_cast<size_t>(spec.group)] * spec.len;
    if (e - b != want) {
      return CorruptionError("column " + spec.name + " has " + std::to_string(e - b)
                             + " values where its counter says " + std::to_string(want));
    }
  }
  return OkStatus();
}

// The S block's fixed columns (and, with J chunks, the collection columns) of rows
// [row, row + n), which CheckPiece has checked E block by E block.
Status ShardBuilder::StageS(std::span<const rootio::Column> cols, int64_t row, size_t n) {
  for (size_t c = 0; c < schema_.columns.size(); ++c) {
    const ColumnSpec& spec = schema_.columns[c];
    if (spec.jagged() && !j_chunks_) {
      continue;
    }
    const std::span<const uint8_t> v = ValuesOf(cols[c], spec, row, n);
    const size_t slot = static_cast<size_t>(spec.slot) + (spec.jagged() ? schema_.fixed.size() : 0);
    AppendBytes(s_bufs_[slot], v.data(), v.size());
  }
  return OkStatus();
}

Result<std::unique_ptr<ShardBuilder::Job>> ShardBuilder::TakeJob(bool e_block) {
  while (jobs_.size() >= kJobsPerThread * std::max<size_t>(1, pool_->threads())) {
    FERRY_TRY(WriteFront());
  }
  // E and S jobs keep their own buffers: an S job's columns are 512 times an E job's.
  auto& free = e_block ? free_e_jobs_ : free_s_jobs_;
  if (free.empty()) {
    return std::make_unique<Job>();
  }
  std::unique_ptr<Job> job = std::move(free.back());
  free.pop_back();
  return job;
}

Status ShardBuilder::FlushE() {
  if (e_events_ == 0) {
    return OkStatus();
  }
  std::unique_ptr<Job> job = FERRY_TRY(TakeJob(true));
  job->kind = Job::kE;
  job->events = static_cast<uint32_t>(e_events_);
  job->records.swap(e_records_);
  e_records_.clear();
  // The payload: group totals, then every staged column byte-shuffled.
  size_t total = 4 * e_group_elements_.size();
  for (const auto& c : e_bufs_) {
    total += c.size();
  }
  job->shuffled.resize(total);
  uint8_t* p = job->shuffled.data();
  for (uint32_t g : e_group_elements_) {
    StoreLE<uint32_t>(p, g);
    p += 4;
  }
  for (size_t c = 0; c < schema_.columns.size(); ++c) {
    const size_t w = schema_.columns[c].value_size();
    ShuffleBytes(e_bufs_[c].data(), e_bufs_[c].size() / w, w, p);
    p += e_bufs_[c].size();
    e_bufs_[c].clear();
  }
  std::fill(e_group_elements_.begin(), e_group_elements_.end(), 0);
  e_events_ = 0;
  SubmitE(std::move(job));
  return OkStatus();
}

Status ShardBuilder::FlushEFrom(std::span<const rootio::Column> cols, int64_t row, size_t n) {
  std::unique_ptr<Job> job = FERRY_TRY(TakeJob(true));
  job->kind = Job::kE;
  job->events = static_cast<uint32_t>(n);
  job->records.swap(e_records_);
  e_records_.clear();
  size_t total = 4 * schema_.groups();
  for (size_t c = 0; c < schema_.columns.size(); ++c) {
    total += ValuesOf(cols[c], schema_.columns[c], row, n).size();
  }
  job->shuffled.resize(total);
  uint8_t* p = job->shuffled.data();
  for (uint64_t g : piece_elements_) {
    StoreLE<uint32_t>(p, static_cast<uint32_t>(g));
    p += 4;
  }
  for (size_t c = 0; c < schema_.columns.size(); ++c) {
    const size_t w = schema_.columns[c].value_size();
    const std::span<const uint8_t> v = ValuesOf(cols[c], schema_.columns[c], row, n);
    ShuffleBytes(v.data(), v.size() / w, w, p);
    p += v.size();
  }
  SubmitE(std::move(job));
  return OkStatus();
}

// Compression (with the verifying decompression), header and CRC of an E job's payload, on the
// pool.
void ShardBuilder::SubmitE(std::unique_ptr<Job> job) {
  Job* j = job.get();
  const codec::Setting setting = manifest_.codec;
  const Dictionary* dict = dict_;
  j->ticket = pool_->Submit([j, setting, dict] {
    j->stored.resize(kEBlockHeaderBytes);
    auto n = CompressVerified(setting, j->shuffled, &j->stored, &j->check, dict);
    if (!n.has_value()) {
      j->status = std::move(n).error();
      return;
    }
    const bool with_dict = dict != nullptr && *n < j->shuffled.size();
    StoreLE<uint32_t>(j->stored.data() + 4, j->events);
    StoreLE<uint32_t>(j->stored.data() + 8, static_cast<uint32_t>(j->shuffled.size()));
    StoreLE<uint32_t>(j->stored.data() + 12, with_dict ? kEBlockFlagDictionary : 0);
    StoreLE<uint32_t>(j->stored.data(), crc32c::Value(j->stored.data() + 4, j->stored.size() - 4));
    j->raw_bytes = j->shuffled.size();
    j->status = OkStatus();
  });
  jobs_.push_back(std::move(job));
}

Status ShardBuilder::FlushS() {
  if (s_events_ == 0) {
    return OkStatus();
  }
  std::unique_ptr<Job> job = FERRY_TRY(TakeJob(false));
  job->kind = Job::kS;
  job->columns.resize(s_bufs_.size());
  for (size_t i = 0; i < s_bufs_.size(); ++i) {
    job->columns[i].swap(s_bufs_[i]);
    s_bufs_[i].clear();
  }
  s_events_ = 0;
  Job* j = job.get();
  const Schema* schema = &schema_;
  const codec::Setting setting = manifest_.codec;
  j->ticket = pool_->Submit([j, schema, setting] {
    j->stored.clear();
    j->chunk_sizes.clear();
    j->chunk_crcs.clear();
    j->raw_bytes = 0;
    for (size_t i = 0; i < j->columns.size(); ++i) {
      const int32_t c =
          i < schema->fixed.size() ? schema->fixed[i] : schema->jagged[i - schema->fixed.size()];
      const size_t w = schema->columns[static_cast<size_t>(c)].value_size();
      const std::vector<uint8_t>& raw = j->columns[i];
      j->shuffled.resize(raw.size());
      ShuffleBytes(raw.data(), raw.size() / w, w, j->shuffled.data());
      const size_t at = j->stored.size();
      auto n = CompressVerified(setting, j->shuffled, &j->stored, &j->check);
      if (!n.has_value()) {
        j->status = std::move(n).error();
        return;
      }
      j->chunk_sizes.push_back(static_cast<uint32_t>(*n));
      j->chunk_crcs.push_back(crc32c::Value(j->stored.data() + at, *n));
      j->raw_bytes += raw.size();
    }
    j->status = OkStatus();
  });
  jobs_.push_back(std::move(job));
  return OkStatus();
}

Status ShardBuilder::Drain(bool wait) {
  while (!jobs_.empty()) {
    Job& job = *jobs_.front();
    if (!wait && !job.ticket.done()) {
      break;
    }
    FERRY_TRY(WriteFront());
  }
  return OkStatus();
}

Status ShardBuilder::WriteFront() {
  Job& job = *jobs_.front();
  job.ticket.Wait();
  FERRY_TRY_CTX(WriteJob(job), out_.path());
  (job.kind == Job::kE ? free_e_jobs_ : free_s_jobs_).push_back(std::move(jobs_.front()));
  jobs_.pop_front();
  return OkStatus();
}

Status ShardBuilder::WriteJob(Job& job) {
  FERRY_TRY(job.status);
  stats_.raw_bytes += job.raw_bytes;
  if (job.kind == Job::kS) {
    uint64_t at = out_.end();
    for (size_t i = 0; i < job.chunk_sizes.size(); ++i) {
      s_dir_[i].push_back({at, job.chunk_sizes[i], job.chunk_crcs[i]});
      at += job.chunk_sizes[i];
      ++stats_.s_chunks;
    }
    return out_.Append(job.stored);
  }
  const uint64_t offset = out_.end();
  if (job.stored.size() > UINT32_MAX) {
    return UnsupportedError("E block over 4 GiB; use a smaller --block-size");
  }
  const auto size = static_cast<uint32_t>(job.stored.size());
  FERRY_TRY(out_.Append(job.stored));
  AppendCBlockRef(e_table_, {offset, size, job.events});
  ++stats_.e_blocks;
  std::sort(
      job.records.begin(), job.records.end(),
      [](const PendingRecord& a, const PendingRecord& b) { return a.slot_offset < b.slot_offset; });
  RecordRuns runs(out_.fd());
  for (const PendingRecord& r : job.records) {
    std::span<uint8_t> rec = FERRY_TRY(runs.Next(r.slot_offset, kRecordV3Bytes));
    WriteRecordV3(rec, {.block_size = size,
                        .block_offset = offset,
                        .ordinal = r.ordinal,
                        .event_low = r.event_low});
  }
  return runs.Flush();
}

Result<ShardBuildStats> ShardBuilder::Finish() {
  if (finished_) {
    return InvalidArgumentError("shard already finished");
  }
  finished_ = true;
  FERRY_TRY(CheckPlanComplete(plan_, events_));
  FERRY_TRY(FlushE());
  FERRY_TRY(FlushS());
  FERRY_TRY(Drain(true));
  FERRY_TRY(out_.WriteTail(s_dir_, e_table_, &header_));
  FERRY_TRY_CTX(ReadBack(), out_.path() + " (read back after writing)");
  FERRY_TRY(out_.Close());
  stats_.stored_bytes = out_.appended();
  stats_.bytes = out_.end();
  return stats_;
}

// Every block and chunk read back from the file and its CRC checked: the bytes on disk are the
// bytes the verified jobs produced (their contents were checked by decompression in the jobs).
Status ShardBuilder::ReadBack() {
  std::vector<uint8_t> buf;
  for (size_t b = 0; b * kCTableEntryBytes < e_table_.size(); ++b) {
    CBlockRef r = ParseCBlockRef(std::span(e_table_).subspan(b * kCTableEntryBytes));
    buf.resize(r.size);
    FERRY_TRY(PreadFull(out_.fd(), buf.data(), buf.size(), r.offset));
    FERRY_TRY_CTX(ParseEBlockHeader(buf, true), "E block " + std::to_string(b));
    stats_.verified_bytes += r.size;
  }
  for (size_t i = 0; i < s_dir_.size(); ++i) {
    for (size_t b = 0; b < s_dir_[i].size(); ++b) {
      const ChunkRef& r = s_dir_[i][b];
      buf.resize(r.size);
      FERRY_TRY(PreadFull(out_.fd(), buf.data(), buf.size(), r.offset));
      if (crc32c::Value(buf) != r.crc) {
        return CorruptionError("S chunk " + std::to_string(b) + " of column slot "
                               + std::to_string(i) + ": checksum mismatch");
      }
      stats_.verified_bytes += r.size;
    }
  }
  return OkStatus();
}

}  // namespace ferry::store
