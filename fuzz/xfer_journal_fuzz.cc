// Fuzz target: the transfer receiver's resume journal (xfer/journal.h, docs/format/transfer.md),
// which an earlier receiver process wrote and a crash may have cut anywhere. Input: the bytes of
// a journal. The expected header is taken from the input's own header fields, so most inputs
// reach the records. What parses must be sorted by block, one record per block, every block
// inside the file; and the records re-encoded after the header must parse to the same list.
#include <cstdint>
#include <span>
#include <vector>

#include "base/endian.h"
#include "xfer/journal.h"

using namespace ferry;
using namespace ferry::xfer;

namespace {

JournalHeader ClaimedHeader(std::span<const uint8_t> in) {
  JournalHeader h;
  if (in.size() >= kJournalHeaderSize) {
    h.block_size = LoadLE<uint32_t>(in.data() + 8);
    h.file_size = LoadLE<uint64_t>(in.data() + 16);
    h.mtime_ns = LoadLE<int64_t>(in.data() + 24);
    h.name_hash = LoadLE<uint64_t>(in.data() + 32);
  }
  return h;
}

void CheckRoundTrip(const JournalHeader& h, const std::vector<BlockHash>& blocks) {
  std::vector<uint8_t> again = EncodeJournalHeader(h);
  again.resize(kJournalHeaderSize + blocks.size() * kJournalRecordSize);
  for (size_t i = 0; i < blocks.size(); ++i) {
    EncodeJournalRecord(blocks[i], again.data() + kJournalHeaderSize + i * kJournalRecordSize);
  }
  auto back = ParseJournal(again, h, "again");
  if (!back.has_value() || back->size() != blocks.size()) {
    __builtin_trap();
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    if ((*back)[i].block != blocks[i].block || (*back)[i].hash != blocks[i].hash) {
      __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  const JournalHeader h = ClaimedHeader(in);
  auto blocks = ParseJournal(in, h, "fuzz");
  if (!blocks.has_value()) {
    return 0;
  }
  const uint64_t n_blocks = BlockCount(h.file_size, h.block_size);
  for (size_t i = 0; i < blocks->size(); ++i) {
    if ((*blocks)[i].block >= n_blocks || (i > 0 && (*blocks)[i - 1].block >= (*blocks)[i].block)) {
      __builtin_trap();
    }
  }
  CheckRoundTrip(h, *blocks);
  return 0;
}
