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

}  // namespace
}  // namespace ferry::xfer
