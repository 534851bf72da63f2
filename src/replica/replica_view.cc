#include "replica/replica_view.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace ferry::replica {
namespace {

// Copies the overlap of [src_offset, src_offset + src.size()) and [offset, offset + dest.size()).
void CopyOverlap(uint64_t src_offset,
                 std::span<const uint8_t> src,
                 uint64_t offset,
                 std::span<uint8_t> dest) {
  const uint64_t a = std::max(src_offset, offset);
  const uint64_t b = std::min(src_offset + src.size(), offset + dest.size());
  if (a < b) {
    std::memcpy(dest.data() + (a - offset), src.data() + (a - src_offset), b - a);
  }
}

}  // namespace

Result<ReplicaManifest> LoadManifest(const cache::EntryPaths& paths,
                                     const cache::PageSealer* sealer) {
  Fd fd = FERRY_TRY(Fd::Open(paths.manifest(), O_RDONLY));
  const uint64_t size = FERRY_TRY(FileSize(fd.get()));
  if (size > (1ull << 30)) {
    return CorruptionError("replica manifest " + paths.manifest() + " is over 1 GiB");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  FERRY_TRY_CTX(PreadFull(fd.get(), bytes.data(), bytes.size(), 0), paths.manifest());
  return FERRY_TRY_CTX(ReplicaManifest::Decode(bytes, sealer), paths.manifest());
}

Result<std::shared_ptr<const ReplicaView>> ReplicaView::Open(
    const cache::EntryPaths& paths,
    const cache::IndexInfo& entry,
    const cache::PageSealer* sealer,
    const std::function<void()>& after_manifest) {
  // A build publishes its manifest, then removes the previous generation's data file: a reader
  // that loaded the previous manifest just before finds that file gone, and the manifest now
  // names a newer generation. Loaded again then (each retry follows a publish, so few suffice).
  constexpr int kAttempts = 4;
  for (int attempt = 1;; ++attempt) {
    ReplicaManifest m = FERRY_TRY(LoadManifest(paths, sealer));
    if (m.epoch != entry.epoch || m.origin_size != entry.origin_size
        || m.origin_mtime != entry.origin_mtime || m.url != entry.url) {
      return CorruptionError("replica " + paths.manifest() + " belongs to an older copy of "
                             + entry.url);
    }
    if (!m.LibrariesMatch()) {
      return UnsupportedError("replica " + paths.manifest()
                              + " was written with other versions of zstd or lz4");
    }
    if (after_manifest) {
      after_manifest();
    }
    Result<Fd> data = Fd::Open(paths.replica_data(m.generation), O_RDONLY);
    if (!data && data.error().sys_errno() == ENOENT && attempt < kAttempts) {
      continue;
    }
    std::shared_ptr<ReplicaView> v(new ReplicaView());
    v->data_ = FERRY_TRY(std::move(data));
    const uint64_t size = FERRY_TRY(FileSize(v->data_.get()));
    if (size < m.data_bytes) {
      return CorruptionError("replica data " + paths.replica_data(m.generation) + " is short");
    }
    if (m.sealed) {
      v->sealer_ = m.Sealer(*sealer);
    }
    v->manifest_ = std::move(m);
    v->ReadAhead(0);
    return std::shared_ptr<const ReplicaView>(std::move(v));
  }
}

void ReplicaView::ReadAhead(uint64_t file_offset) const {
  const uint64_t end = manifest_.data_bytes;
  uint64_t until = advised_until_.load(std::memory_order_relaxed);
  while (until < end && file_offset + kReadAheadBytes / 2 >= until) {
    const uint64_t from = std::max(until, file_offset);
    const uint64_t next = std::min(end, from + kReadAheadBytes);
    if (advised_until_.compare_exchange_weak(until, next, std::memory_order_relaxed)) {
      // One thread advises each window; the readers go on meanwhile (the advice only starts
      // the reads of what the page cache lacks). In pieces: the kernel reads at most the
      // device's read-ahead size (read_ahead_kb, often 128 KiB) or largest request of one advice.
      constexpr uint64_t kPiece = 1u << 20;
      for (uint64_t at = from; at < next; at += kPiece) {
        (void)::posix_fadvise(data_.get(), static_cast<off_t>(at),
                              static_cast<off_t>(std::min(kPiece, next - at)), POSIX_FADV_WILLNEED);
      }
      return;
    }
  }
}

void ReplicaView::ApplyPatches(uint64_t offset, std::span<uint8_t> dest) const {
  for (const ReplicaPatch& p : manifest_.patches) {
    CopyOverlap(p.offset, p.bytes, offset, dest);
  }
}

void ReplicaView::ReadHead(uint64_t offset, std::span<uint8_t> dest) const {
  std::memset(dest.data(), 0, dest.size());
  for (const ReplicaRecord& r : manifest_.records) {
    CopyOverlap(r.offset, r.bytes, offset, dest);
  }
}

}  // namespace ferry::replica
