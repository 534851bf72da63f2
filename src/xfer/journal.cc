#include "xfer/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/crc32c.h"
#include "base/endian.h"
#include "xfer/paths.h"

namespace ferry::xfer {
namespace {
constexpr uint32_t kJournalMagic = 0x314a5846;  // "FXJ1"
constexpr uint16_t kJournalVersion = 1;

// kJournalHeaderSize + (blocks * 4 + 1024) records, saturating at UINT64_MAX.
uint64_t MaxJournalBytes(const JournalHeader& h) {
  const uint64_t blocks = BlockCount(h.file_size, h.block_size);
  constexpr uint64_t kMaxBlocks = (UINT64_MAX / kJournalRecordSize - 1024) / 4 - 8;
  if (blocks > kMaxBlocks) {
    return UINT64_MAX;
  }
  return kJournalHeaderSize + (blocks * 4 + 1024) * kJournalRecordSize;
}

// The records after the header up to the first torn, damaged or out-of-file one.
std::vector<BlockHash> ValidRecords(std::span<const uint8_t> bytes, uint64_t n_blocks) {
  std::vector<BlockHash> out;
  for (size_t at = kJournalHeaderSize; at + kJournalRecordSize <= bytes.size();
       at += kJournalRecordSize) {
    const uint8_t* r = bytes.data() + at;
    if (LoadLE<uint32_t>(r + 16) != crc32c::Value(r, 16) || LoadLE<uint32_t>(r + 20) != 0) {
      break;  // torn or damaged tail
    }
    BlockHash b{LoadLE<uint64_t>(r), LoadLE<uint64_t>(r + 8)};
    if (b.block >= n_blocks) {
      break;
    }
    out.push_back(b);
  }
  return out;
}

// Sorted by block, keeping the last record of a block (a re-sent block may have replaced an
// earlier write).
std::vector<BlockHash> SortedLastPerBlock(std::vector<BlockHash> records) {
  std::stable_sort(records.begin(), records.end(),
                   [](const BlockHash& a, const BlockHash& b) { return a.block < b.block; });
  std::vector<BlockHash> dedup;
  for (const BlockHash& b : records) {
    if (!dedup.empty() && dedup.back().block == b.block) {
      dedup.back() = b;
    } else {
      dedup.push_back(b);
    }
  }
  return dedup;
}

}  // namespace

std::vector<uint8_t> EncodeJournalHeader(const JournalHeader& h) {
  std::vector<uint8_t> out(kJournalHeaderSize, 0);
  uint8_t* p = out.data();
  StoreLE<uint32_t>(p, kJournalMagic);
  StoreLE<uint16_t>(p + 4, kJournalVersion);
  StoreLE<uint32_t>(p + 8, h.block_size);
  StoreLE<uint64_t>(p + 16, h.file_size);
  StoreLE<int64_t>(p + 24, h.mtime_ns);
  StoreLE<uint64_t>(p + 32, h.name_hash);
  StoreLE<uint32_t>(p + 60, crc32c::Value(p, 60));
  return out;
}

void EncodeJournalRecord(const BlockHash& r, uint8_t* out) {
  StoreLE<uint64_t>(out, r.block);
  StoreLE<uint64_t>(out + 8, r.hash);
  StoreLE<uint32_t>(out + 16, crc32c::Value(out, 16));
  StoreLE<uint32_t>(out + 20, 0);
}

Result<std::vector<BlockHash>> Journal::Read(int dir_fd,
                                             const std::string& name,
                                             const JournalHeader& expect) {
  if (expect.block_size == 0) {
    return InvalidArgumentError("journal " + name + ": block size 0");
  }
  Fd fd = FERRY_TRY(OpenInDir(dir_fd, name, O_RDONLY));
  uint64_t size = FERRY_TRY(FileSize(fd.get()));
  // A journal never holds more than one record per block plus duplicates from retries; cap the
  // read so a hostile or damaged file cannot make us allocate without bound (saturating: the
  // sender names the file size).
  std::vector<uint8_t> bytes(std::min(size, MaxJournalBytes(expect)));
  FERRY_TRY(PreadFull(fd.get(), bytes.data(), bytes.size(), 0));
  return ParseJournal(bytes, expect, name);
}

Result<std::vector<BlockHash>> ParseJournal(std::span<const uint8_t> bytes,
                                            const JournalHeader& expect,
                                            const std::string& name) {
  if (expect.block_size == 0) {
    return InvalidArgumentError("journal " + name + ": block size 0");
  }
  if (bytes.size() < kJournalHeaderSize) {
    return CorruptionError("journal " + name + " is shorter than its header");
  }
  const uint8_t* p = bytes.data();
  if (LoadLE<uint32_t>(p) != kJournalMagic || LoadLE<uint16_t>(p + 4) != kJournalVersion
      || LoadLE<uint32_t>(p + 60) != crc32c::Value(p, 60)) {
    return CorruptionError("journal " + name + " has a bad header");
  }
  JournalHeader h;
  h.block_size = LoadLE<uint32_t>(p + 8);
  h.file_size = LoadLE<uint64_t>(p + 16);
  h.mtime_ns = LoadLE<int64_t>(p + 24);
  h.name_hash = LoadLE<uint64_t>(p + 32);
  if (!(h == expect)) {
    return InvalidArgumentError("journal " + name + " belongs to another version of the file");
  }
  return SortedLastPerBlock(ValidRecords(bytes, BlockCount(h.file_size, h.block_size)));
}

Result<Journal> Journal::Create(int dir_fd,
                                const std::string& name,
                                const JournalHeader& header,
                                std::span<const BlockHash> initial) {
  Fd fd = FERRY_TRY(OpenInDir(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600));
  std::vector<uint8_t> bytes = EncodeJournalHeader(header);
  bytes.resize(kJournalHeaderSize + initial.size() * kJournalRecordSize);
  for (size_t i = 0; i < initial.size(); ++i) {
    EncodeJournalRecord(initial[i], bytes.data() + kJournalHeaderSize + i * kJournalRecordSize);
  }
  FERRY_TRY(PwriteFull(fd.get(), bytes.data(), bytes.size(), 0));
  return Journal(std::move(fd));
}

Status Journal::Append(std::span<const BlockHash> records) {
  if (records.empty()) {
    return OkStatus();
  }
  uint8_t buf[kJournalRecordSize * 64];
  size_t i = 0;
  while (i < records.size()) {
    size_t n = std::min<size_t>(64, records.size() - i);
    for (size_t k = 0; k < n; ++k) {
      EncodeJournalRecord(records[i + k], buf + k * kJournalRecordSize);
    }
    size_t len = n * kJournalRecordSize;
    size_t done = 0;
    // O_APPEND: each write lands at the end; bounded by the record count.
    while (done < len) {
      ssize_t w = ::write(fd_.get(), buf + done, len - done);
      if (w < 0) {
        if (errno == EINTR) {
          continue;
        }
        int e = errno;
        return Error(e == ENOSPC ? ErrorCode::kNoSpace : ErrorCode::kIo, "journal append failed",
                     e);
      }
      done += static_cast<size_t>(w);
    }
    i += n;
  }
  return OkStatus();
}

}  // namespace ferry::xfer
