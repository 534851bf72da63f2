// Hooks(): the replica tier behind the cache's interface (hooks.h).
#include "replica/hooks.h"

#include <fcntl.h>

#include <vector>

#include "base/crc32c.h"
#include "base/fd.h"
#include "cache/config.h"
#include "cache/entry_store.h"
#include "cache/page_index.h"
#include "cache/verify.h"
#include "replica/access_trace.h"
#include "replica/replica_codec.h"
#include "replica/replica_queue.h"
#include "replica/replica_view.h"

namespace ferry::replica {
namespace {

// Checks the replica of the entry at `paths`, if any, into the report's replica fields.
void VerifyReplica(const cache::EntryPaths& paths,
                   const cache::IndexInfo& entry,
                   const cache::PageSealer* sealer,
                   cache::VerifyReport& report) {
  auto m = LoadManifest(paths, sealer);
  if (!m && m.error().code() == ErrorCode::kNotFound) {
    return;
  }
  report.has_replica = true;
  if (!m) {
    report.replica_bad = true;
    report.replica_error = m.error().ToString();
    return;
  }
  if (m->epoch != entry.epoch || m->origin_size != entry.origin_size
      || m->origin_mtime != entry.origin_mtime || m->url != entry.url) {
    report.replica_stale = true;
    return;
  }
  auto data = Fd::Open(paths.replica_data(m->generation), O_RDONLY);
  const std::unique_ptr<const ReplicaSealer> extents = m->sealed ? m->Sealer(*sealer) : nullptr;
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < m->extents.size(); ++i) {
    const ReplicaExtent& e = m->extents[i];
    buf.resize(e.bytes);
    if (data && PreadFull(data->get(), buf.data(), e.bytes, e.offset - m->baskets_begin)
        && (extents ? extents->OpenExtent(static_cast<uint32_t>(i), e.offset, buf, e.tag)
                    : crc32c::Value(buf.data(), buf.size()) == e.crc)) {
      report.replica_extents_ok += 1;
    } else {
      report.replica_extents_bad += 1;
    }
  }
  if (!data) {
    report.replica_error = data.error().ToString();
  }
  report.replica_bad = !data || report.replica_extents_bad > 0;
}

class ReplicaTier final : public cache::ReplicaHooks {
 public:
  Result<std::shared_ptr<const cache::VirtualFile>> OpenVirtual(
      const cache::EntryPaths& paths,
      const cache::IndexInfo& entry,
      const cache::PageSealer* sealer) const override {
    return std::shared_ptr<const cache::VirtualFile>(
        FERRY_TRY(ReplicaView::Open(paths, entry, sealer)));
  }

  void EncodeAccess(uint64_t generation,
                    std::span<const io::ReadRequest> requests,
                    std::vector<uint8_t>& out) const override {
    thread_local std::vector<TraceRange> ranges;  // no allocation once warm
    ranges.clear();
    for (const io::ReadRequest& r : requests) {
      ranges.push_back({r.offset, static_cast<uint32_t>(r.dest.size())});
    }
    EncodeTraceRecord(generation, ranges, out);
  }

  uint64_t access_log_max_bytes() const override { return kTraceMaxBytes; }

  void RequestBuild(const cache::Config& config,
                    const std::string& key,
                    bool still_open) const override {
    RequestReplicaBuild(config, key, still_open);
  }

  void Verify(const cache::EntryPaths& paths,
              const cache::IndexInfo& entry,
              const cache::PageSealer* sealer,
              cache::VerifyReport& report) const override {
    VerifyReplica(paths, entry, sealer, report);
  }

  Status CheckSetting(std::string_view key, std::string_view value) const override {
    if (key == "replica_codec") {
      return CheckReplicaCodec(value);
    }
    return InvalidArgumentError("not a setting of the replica tier");
  }
};

}  // namespace

std::shared_ptr<const cache::ReplicaHooks> Hooks() {
  // Each cache keeps its own reference, so the process's exit may destroy this one first.
  static const std::shared_ptr<const cache::ReplicaHooks> tier =
      std::make_shared<const ReplicaTier>();
  return tier;
}

}  // namespace ferry::replica
