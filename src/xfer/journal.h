// The receiver's resume journal: one per file being received, beside its ".part" file.
//
// Layout (little-endian; docs/format/transfer.md):
//   header, 64 bytes: u32 magic "FXJ1", u16 version 1, u16 0, u32 block_size, u32 0,
//                     u64 file_size, i64 mtime_ns, u64 name_hash (XXH3-64 of the relative
//                     path), 20 zero bytes, u32 CRC32C of bytes 0..59
//   records, 24 bytes each: u64 block, u64 XXH3-64 of the block, u32 CRC32C of bytes 0..15,
//                     u32 0
// A record is appended only after the block's data reached the disk (fdatasync), so after a
// crash every record names a block that is on disk with that hash. A torn or corrupt record
// ends the journal (later records are ignored). Not thread-safe: one owner per journal.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "xfer/protocol.h"

namespace ferry::xfer {

struct JournalHeader {
  uint64_t file_size = 0;
  uint32_t block_size = 0;
  int64_t mtime_ns = 0;
  uint64_t name_hash = 0;
  bool operator==(const JournalHeader&) const = default;
};

inline constexpr size_t kJournalHeaderSize = 64;
inline constexpr size_t kJournalRecordSize = 24;

class Journal {
 public:
  // The verified blocks recorded in an existing journal, sorted by block and deduplicated.
  // kNotFound when absent; kInvalidArgument when it belongs to another version of the file
  // (header differs); kCorruption when the header is damaged.
  static Result<std::vector<BlockHash>> Read(int dir_fd,
                                             const std::string& name,
                                             const JournalHeader& expect);

  // Creates (or truncates) the journal and writes the header and `initial` records.
  static Result<Journal> Create(int dir_fd,
                                const std::string& name,
                                const JournalHeader& header,
                                std::span<const BlockHash> initial);

  Journal() = default;
  Status Append(std::span<const BlockHash> records);
  bool valid() const { return fd_.valid(); }

 private:
  explicit Journal(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

// The verified blocks recorded in the bytes of a journal (Journal::Read without the file), with
// Read's errors; `name` only labels them. A block size of 0 in `expect` is kInvalidArgument.
Result<std::vector<BlockHash>> ParseJournal(std::span<const uint8_t> bytes,
                                            const JournalHeader& expect,
                                            const std::string& name);

std::vector<uint8_t> EncodeJournalHeader(const JournalHeader& h);
void EncodeJournalRecord(const BlockHash& r, uint8_t* out);

}  // namespace ferry::xfer
