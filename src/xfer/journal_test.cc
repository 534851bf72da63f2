#include "xfer/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace ferry::xfer {
namespace {

TEST(XferJournal, CreateAppendRead) {
  testing::TempDir tmp;
  Fd dir(::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY));
  JournalHeader h{10 * 4096 + 1, 4096, 1234, 99};
  std::vector<BlockHash> initial = {{3, 33}};
  auto j = Journal::Create(dir.get(), "j", h, initial);
  ASSERT_TRUE(j.has_value()) << j.error().ToString();
  std::vector<BlockHash> more = {{0, 10}, {10, 100}, {3, 34}};
  ASSERT_TRUE(j->Append(more).has_value());
  auto r = Journal::Read(dir.get(), "j", h);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].block, 0u);
  EXPECT_EQ((*r)[1].block, 3u);
  EXPECT_EQ((*r)[1].hash, 34u);  // the later record wins
  EXPECT_EQ((*r)[2].block, 10u);

  JournalHeader other = h;
  other.mtime_ns = 1;
  auto stale = Journal::Read(dir.get(), "j", other);
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Journal::Read(dir.get(), "absent", h).error().code(), ErrorCode::kNotFound);
}

TEST(XferJournal, TornTailIsIgnored) {
  testing::TempDir tmp;
  Fd dir(::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY));
  JournalHeader h{100 * 4096, 4096, 0, 1};
  std::vector<BlockHash> recs = {{1, 1}, {2, 2}, {3, 3}};
  ASSERT_TRUE(Journal::Create(dir.get(), "j", h, recs).has_value());
  std::string path = tmp.File("j");
  // Damage the third record and append half a record.
  auto bytes = testing::ReadWholeFile(path);
  bytes[kJournalHeaderSize + 2 * kJournalRecordSize + 3] ^= 1;
  bytes.insert(bytes.end(), 10, 0xab);
  testing::WriteWholeFile(path, bytes);
  auto r = Journal::Read(dir.get(), "j", h);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->size(), 2u);
  // A damaged header is corruption.
  bytes[5] ^= 1;
  testing::WriteWholeFile(path, bytes);
  EXPECT_EQ(Journal::Read(dir.get(), "j", h).error().code(), ErrorCode::kCorruption);
}

TEST(XferJournal, BlockOutsideTheFileEndsIt) {
  testing::TempDir tmp;
  Fd dir(::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY));
  JournalHeader h{2 * 4096, 4096, 0, 1};
  std::vector<BlockHash> recs = {{1, 1}, {7, 2}, {0, 3}};
  ASSERT_TRUE(Journal::Create(dir.get(), "j", h, recs).has_value());
  auto r = Journal::Read(dir.get(), "j", h);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->size(), 1u);
}

// Sizes the peer names: a block size of 0 is refused (no division by it), and a file of
// 2^64 - 1 bytes in 1-byte blocks counts its blocks without overflow.
TEST(XferJournal, ExtremeSizesFromThePeer) {
  JournalHeader zero{12345, 0, 1, 2};
  auto r = ParseJournal(EncodeJournalHeader(zero), zero, "j");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  JournalHeader huge{UINT64_MAX, 1, 1, 2};
  std::vector<uint8_t> bytes = EncodeJournalHeader(huge);
  bytes.resize(kJournalHeaderSize + 2 * kJournalRecordSize);
  EncodeJournalRecord({UINT64_MAX - 1, 7}, bytes.data() + kJournalHeaderSize);
  EncodeJournalRecord({5, 8}, bytes.data() + kJournalHeaderSize + kJournalRecordSize);
  auto blocks = ParseJournal(bytes, huge, "j");
  ASSERT_TRUE(blocks.has_value()) << blocks.error().ToString();
  ASSERT_EQ(blocks->size(), 2u);  // the last block of the file, then sorted
  EXPECT_EQ((*blocks)[0].block, 5u);
  EXPECT_EQ((*blocks)[1].block, UINT64_MAX - 1);
  EXPECT_EQ(BlockCount(UINT64_MAX, 1), UINT64_MAX);
  EXPECT_EQ(BlockCount(UINT64_MAX, 4096), UINT64_MAX / 4096 + 1);
}

}  // namespace
}  // namespace ferry::xfer
