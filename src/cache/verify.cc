#include "cache/verify.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <vector>

#include "base/fd.h"
#include "cache/lock_file.h"
#include "cache/page_crc.h"

namespace ferry::cache {
namespace {

bool CheckBytes(int fd, uint64_t offset, uint32_t length, uint32_t crc, std::vector<uint8_t>& buf) {
  if (buf.size() < length) {
    buf.resize(length);
  }
  return fd >= 0 && PreadFull(fd, buf.data(), length, offset) && PageCrc(buf.data(), length) == crc;
}

}  // namespace

Result<VerifyReport> VerifyEntry(const EntryPaths& paths, bool repair, int lock_timeout_ms) {
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
  auto data = Fd::Open(paths.data(), O_RDONLY);
  auto frag = Fd::Open(paths.frag(), O_RDONLY);
  const int data_fd = data ? data->get() : -1;
  const int frag_fd = frag ? frag->get() : -1;
  std::vector<uint8_t> buf;
  std::vector<uint64_t> bad;
  for (uint64_t p = 0; p < index->page_count(); ++p) {
    if (index->full(p)) {
      if (CheckBytes(data_fd, p * index->page_size(), index->PageLength(p), index->crc(p), buf)) {
        report.pages_ok += 1;
      } else {
        report.pages_bad += 1;
        bad.push_back(p);
      }
    }
  }
  uint64_t named = 0;
  for (const auto& [page, f] : index->fragments()) {
    named += f.length();
    if (CheckBytes(frag_fd, f.offset, f.length(), f.crc, buf)) {
      report.fragments_ok += 1;
    } else {
      report.fragments_bad += 1;
      bad.push_back(page);
    }
  }
  report.held_bytes = index->held_bytes();
  if (frag_fd >= 0) {
    struct stat st = {};
    // Allocated, not apparent, size: compaction punches the log's dead blocks out.
    if (::fstat(frag_fd, &st) == 0 && static_cast<uint64_t>(st.st_blocks) * 512 > named) {
      report.garbage_bytes = static_cast<uint64_t>(st.st_blocks) * 512 - named;
    }
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
