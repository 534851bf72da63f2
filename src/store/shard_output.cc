#include "store/shard_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "base/crc32c.h"
#include "base/endian.h"

namespace ferry::store {
namespace {

constexpr uint64_t kAlign = 4096;
// Payload bytes gathered before a write: large sequential writes without holding a whole shard.
constexpr size_t kOutFlushBytes = 8u << 20;

}  // namespace

void SetPlanFields(const ShardPlan& plan, ShardHeader* h) {
  h->run = plan.run;
  h->run_slot = plan.run_slot;
  h->events = plan.event_numbers.size();
  h->lumis = plan.lumis.size();
}

Status CheckPlanComplete(const ShardPlan& plan, uint64_t events) {
  if (events != plan.event_numbers.size()) {
    return CorruptionError("run " + std::to_string(plan.run) + ": " + std::to_string(events)
                           + " events written, the plan has "
                           + std::to_string(plan.event_numbers.size()));
  }
  return OkStatus();
}

uint64_t AlignToPage(uint64_t v) {
  return (v + kAlign - 1) & ~(kAlign - 1);
}

Result<ShardOutput> ShardOutput::Create(const std::string& path) {
  Fd fd = FERRY_TRY(Fd::Open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
  return ShardOutput(std::move(fd), path);
}

Result<uint64_t> ShardOutput::WriteHead(const ShardPlan& plan, ShardHeader* h) {
  std::vector<uint8_t> lumi_table;
  for (const LumiEntry& e : plan.lumis) {
    AppendLumiEntry(lumi_table, e);
  }
  std::vector<uint8_t> numbers(plan.event_numbers.size() * 8);
  for (size_t i = 0; i < plan.event_numbers.size(); ++i) {
    StoreLE<uint64_t>(numbers.data() + 8 * i, plan.event_numbers[i]);
  }
  h->sections[kLumiTable] = {kShardHeaderSize, lumi_table.size()};
  h->sections[kEventNumbers] = {kShardHeaderSize + lumi_table.size(), numbers.size()};
  h->crc_lumi_table = crc32c::Value(lumi_table);
  h->crc_event_numbers = crc32c::Value(numbers);
  FERRY_TRY_CTX(PwriteFull(fd(), lumi_table.data(), lumi_table.size(), kShardHeaderSize), path_);
  FERRY_TRY_CTX(PwriteFull(fd(), numbers.data(), numbers.size(), h->sections[kEventNumbers].offset),
                path_);
  return h->sections[kEventNumbers].offset + numbers.size();
}

void ShardOutput::StartPayload(uint64_t index_end, ShardHeader* h) {
  end_ = AlignToPage(index_end);
  out_at_ = end_;
  h->sections[kPayload].offset = end_;
}

Status ShardOutput::Append(std::span<const uint8_t> bytes) {
  out_.insert(out_.end(), bytes.begin(), bytes.end());
  end_ += bytes.size();
  appended_ += bytes.size();
  if (out_.size() >= kOutFlushBytes) {
    return Flush();
  }
  return OkStatus();
}

Status ShardOutput::Flush() {
  if (!out_.empty()) {
    FERRY_TRY_CTX(PwriteFull(fd(), out_.data(), out_.size(), out_at_), path_);
    out_at_ += out_.size();
    out_.clear();
  }
  return OkStatus();
}

Status ShardOutput::WriteTail(const std::vector<std::vector<ChunkRef>>& s_dir,
                              std::span<const uint8_t> table,
                              ShardHeader* h) {
  FERRY_TRY(Flush());
  h->sections[kPayload].size = end_ - h->sections[kPayload].offset;
  std::vector<uint8_t> tail;
  for (const auto& column : s_dir) {
    for (const ChunkRef& r : column) {
      AppendChunkRef(tail, r);
    }
  }
  h->sections[kSDirectory] = {end_, tail.size()};
  h->crc_s_directory = crc32c::Value(tail);
  h->sections[kCTable] = {end_ + tail.size(), table.size()};
  h->crc_c_table = crc32c::Value(table);
  tail.insert(tail.end(), table.begin(), table.end());
  FERRY_TRY_CTX(PwriteFull(fd(), tail.data(), tail.size(), end_), path_);
  end_ += tail.size();
  // The index region may end in padding slots that were never written.
  if (::ftruncate(fd(), static_cast<off_t>(end_)) != 0) {
    return IoError("ftruncate " + path_, errno);
  }
  std::vector<uint8_t> head = h->Serialize();
  FERRY_TRY_CTX(PwriteFull(fd(), head.data(), head.size(), 0), path_);
  if (::fsync(fd()) != 0) {
    return IoError("fsync " + path_, errno);
  }
  return OkStatus();
}

Status ShardOutput::Close() {
  FERRY_TRY_CTX(fd_.Close(), path_);
  return OkStatus();
}

Result<std::span<uint8_t>> RecordRuns::Next(uint64_t at, size_t size) {
  if (!run_.empty() && at != run_at_ + run_.size()) {
    FERRY_TRY(Flush());
  }
  if (run_.empty()) {
    run_at_ = at;
  }
  const size_t from = run_.size();
  run_.resize(from + size);
  return std::span<uint8_t>(run_).subspan(from, size);
}

Status RecordRuns::Flush() {
  if (!run_.empty()) {
    FERRY_TRY(PwriteFull(fd_, run_.data(), run_.size(), run_at_));
    run_.clear();
  }
  return OkStatus();
}

}  // namespace ferry::store
