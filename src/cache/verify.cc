#include "cache/verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "base/crc32c.h"
#include "base/fd.h"
#include "cache/lock_file.h"
#include "cache/page_crc.h"

namespace ferry::cache {
namespace {

std::span<uint8_t> ReadInto(int fd, uint64_t offset, uint32_t length, std::vector<uint8_t>& buf) {
  buf.resize(length);
  if (fd < 0 || !PreadFull(fd, buf.data(), length, offset)) {
    return {};
  }
  return buf;
}

// The sealer of an encrypted entry, or null with the reason in the report.
std::unique_ptr<PageSealer> SealerFor(const EntryPaths& paths,
                                      const PageIndex& index,
                                      const MasterKey* key,
                                      VerifyReport& report) {
  if (key == nullptr || key->id() != index.info().key_id) {
    report.sealed_unchecked = true;
    report.sealed_note = "encrypted under master key id " + KeyIdHex(index.info().key_id)
                         + (key == nullptr ? ", no key given" : ", not the key given");
    return nullptr;
  }
  auto data_key = key->Unwrap(index.info().wrapped_key);
  if (!data_key) {
    report.sealed_unchecked = true;
    report.sealed_note = data_key.error().ToString();
    return nullptr;
  }
  const std::string name = paths.base.substr(paths.base.rfind('/') + 1);
  auto sealer = std::make_unique<PageSealer>(*data_key, std::strtoull(name.c_str(), nullptr, 16),
                                             index.info().epoch);
  WipeKey(*data_key);
  return sealer;
}

// Checks every full page and fragment of `index` against its CRC (or seal); counts them in
// `report` and lists bad pages in `bad`. Returns the bytes the fragments name in the log.
uint64_t CheckHeld(const PageIndex& index,
                   const PageSealer* sealer,
                   int data_fd,
                   int frag_fd,
                   VerifyReport& report,
                   std::vector<uint64_t>& bad) {
  std::vector<uint8_t> buf;
  for (uint64_t p = 0; p < index.page_count(); ++p) {
    if (index.full(p)) {
      auto bytes = ReadInto(data_fd, p * index.page_size(), index.PageLength(p), buf);
      if (!bytes.empty() && CheckPageBytes(index, sealer, p, bytes)) {
        report.pages_ok += 1;
      } else {
        report.pages_bad += 1;
        bad.push_back(p);
      }
    }
  }
  uint64_t named = 0;
  for (const auto& [page, f] : index.fragments()) {
    named += f.in_data ? 0 : f.length();
    auto bytes = f.in_data ? ReadInto(data_fd, page * index.page_size() + f.lo, f.length(), buf)
                           : ReadInto(frag_fd, f.offset, f.length(), buf);
    if (!bytes.empty() && CheckFragmentBytes(sealer, page, f, bytes)) {
      report.fragments_ok += 1;
    } else {
      report.fragments_bad += 1;
      bad.push_back(page);
    }
  }
  return named;
}

// Allocated blocks no page or fragment names: data pages written by a process that died before
// publishing, superseded fragments in the log.
void CountGarbage(
    const PageIndex& index, int data_fd, int frag_fd, uint64_t named, VerifyReport& report) {
  if (data_fd >= 0) {
    struct stat st = {};
    uint64_t full = index.full_pages() * index.page_size();
    for (const auto& [page, f] : index.fragments()) {
      full += f.in_data ? index.page_size() : 0;  // a fragment there holds its page's block
    }
    if (::fstat(data_fd, &st) == 0 && static_cast<uint64_t>(st.st_blocks) * 512 > full) {
      report.garbage_bytes += static_cast<uint64_t>(st.st_blocks) * 512 - full;
    }
  }
  if (frag_fd >= 0) {
    struct stat st = {};
    // Allocated, not apparent, size: compaction punches the log's dead blocks out.
    if (::fstat(frag_fd, &st) == 0 && static_cast<uint64_t>(st.st_blocks) * 512 > named) {
      report.garbage_bytes += static_cast<uint64_t>(st.st_blocks) * 512 - named;
    }
  }
}

}  // namespace

Result<VerifyReport> VerifyEntry(const EntryPaths& paths,
                                 bool repair,
                                 int lock_timeout_ms,
                                 const MasterKey* key,
                                 const ReplicaHooks* replicas) {
  VerifyReport report;
  auto index = LoadIndex(paths.idx());
  if (!index) {
    if (index.error().code() == ErrorCode::kNotFound) {
      return std::move(index).error();
    }
    report.index_error = index.error().ToString();
    if (repair) {
      LockFile lock = FERRY_TRY(LockFile::Open(paths.lock()));
      FERRY_TRY(lock.Lock(kWriteLockByte, true, lock_timeout_ms));
      FERRY_TRY(RemoveEntryFiles(paths));
      report.repaired = true;
    }
    return report;
  }
  report.index_ok = true;
  report.url = index->info().url;
  std::unique_ptr<PageSealer> sealer;
  if (index->encrypted()) {
    sealer = SealerFor(paths, *index, key, report);
    if (!sealer) {
      return report;
    }
  }
  auto data = Fd::Open(paths.data(), O_RDONLY);
  auto frag = Fd::Open(paths.frag(), O_RDONLY);
  const int data_fd = data ? data->get() : -1;
  const int frag_fd = frag ? frag->get() : -1;
  std::vector<uint64_t> bad;
  const uint64_t named = CheckHeld(*index, sealer.get(), data_fd, frag_fd, report, bad);
  report.held_bytes = index->held_bytes();
  CountGarbage(*index, data_fd, frag_fd, named, report);
  if (replicas != nullptr) {
    replicas->Verify(paths, index->info(), sealer.get(), report);
  }
  if (repair && report.replica_bad) {
    // A damaged replica is dropped whole; the next build makes a new one from the byte tier
    // (readers that opened it keep it, each bad extent rebuilt as they read it).
    for (const std::string& f : {paths.manifest(), paths.replica_status()}) {
      ::unlink(f.c_str());
    }
    RemoveReplicaData(paths, 0);
    report.repaired = true;
  }
  if (repair && !bad.empty()) {
    LockFile lock = FERRY_TRY(LockFile::Open(paths.lock()));
    FERRY_TRY(lock.Lock(kWriteLockByte, true, lock_timeout_ms));
    // Re-read under the lock: a writer may have published meanwhile.
    PageIndex current = FERRY_TRY(LoadIndex(paths.idx()));
    for (uint64_t p : bad) {
      current.Drop(p);
    }
    current.mutable_info().generation += 1;
    std::vector<uint8_t> scratch;
    FERRY_TRY(PublishIndex(paths, current, /*sync=*/true, scratch));
    report.repaired = true;
  }
  return report;
}

}  // namespace ferry::cache
