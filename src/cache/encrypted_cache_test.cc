// Encryption at rest through the whole engine (docs/format/page-store.md, "Encryption at rest"):
// no plaintext on disk, sealed pages that were moved, damaged or left from an older incarnation
// are refetched (counted), key rotation under a reader, and wrong or missing keys.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "base/endian.h"
#include "base/fd.h"
#include "cache/cache.h"
#include "cache/entry_store.h"
#include "cache/page_seal.h"
#include "cache/rekey.h"
#include "cache/testing/memory_origin.h"
#include "cache/url.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

constexpr const char* kUrl = "root://origin.example:1094//data/secret.root";
constexpr const char* kOtherUrl = "root://origin.example:1094//data/twin.root";
constexpr uint64_t kPage = 4096;

std::shared_ptr<const MasterKey> KeyOf(uint8_t fill) {
  KeyBytes k{};
  k.fill(fill);
  return std::make_shared<const MasterKey>(MasterKey::FromBytes(k));
}

struct Fixture {
  testing::TempDir dir;
  std::vector<uint8_t> bytes = testing::PseudoRandomBytes(1024 * 1024 + 321, 11);
  std::shared_ptr<MemoryOrigin> origin = std::make_shared<MemoryOrigin>(bytes);
  Config config = Keyed(KeyOf(1));

  Config Keyed(std::shared_ptr<const MasterKey> key) const {
    Config c = testing::CacheTestConfig(dir.path() + "/cache");
    c.master_key = std::move(key);
    c.replica = ReplicaMode::kOff;
    return c;
  }
  EntryPaths Paths(const char* url = kUrl) const {
    return PathsFor(config.dir, EntryKey(*NormalizeUrl(url)));
  }
};

// Reads [off, off + len) through a fresh Cache of `config` and checks the bytes; returns the
// cache's counters' crc_failures.
uint64_t ReadChecked(const Config& config,
                     const std::shared_ptr<Origin>& origin,
                     const std::vector<uint8_t>& want,
                     uint64_t off,
                     size_t len,
                     const char* url = kUrl) {
  auto cache = Cache::Create(config);
  EXPECT_TRUE(cache) << cache.error().ToString();
  auto f = (*cache)->Open(url, origin);
  EXPECT_TRUE(f) << f.error().ToString();
  std::vector<uint8_t> got(len);
  EXPECT_TRUE((*f)->Read(off, got));
  EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin() + static_cast<long>(off)));
  (*f)->Close();
  EXPECT_TRUE((*cache)->Flush());
  return (*cache)->counters().Get(Counter::kCrcFailures);
}

// Fills the cache: whole pages at the start, and small reads that leave fragments.
void Fill(const Config& config, const std::shared_ptr<Origin>& origin, const char* url = kUrl) {
  auto cache = Cache::Create(config);
  ASSERT_TRUE(cache) << cache.error().ToString();
  auto f = (*cache)->Open(url, origin);
  ASSERT_TRUE(f);
  ASSERT_FALSE((*f)->pass_through());
  std::vector<uint8_t> buf(size_t{256} * 1024);
  ASSERT_TRUE((*f)->Read(0, buf));
  for (uint64_t off = uint64_t{300} * 1024 + 17; off < uint64_t{1000} * 1024;
       off += uint64_t{37} * 1024) {
    std::vector<uint8_t> small(3000);
    ASSERT_TRUE((*f)->Read(off, small));
  }
  (*f)->Close();
  ASSERT_TRUE((*cache)->Flush());
}

// Every regular file below `dir`, read whole.
void ReadTree(const std::string& dir, std::vector<std::pair<std::string, std::string>>& out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    std::string path = dir;
    path.append("/").append(name);
    struct stat st = {};
    if (::lstat(path.c_str(), &st) != 0) {
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      ReadTree(path, out);
    } else if (S_ISREG(st.st_mode)) {
      std::string body(static_cast<size_t>(st.st_size), '\0');
      auto fd = Fd::Open(path, O_RDONLY);
      if (fd && !body.empty()) {
        (void)PreadFull(fd->get(), body.data(), body.size(), 0);
      }
      out.emplace_back(path, std::move(body));
    }
  }
  ::closedir(d);
}

// Files of `dir` holding a 16-byte run of `content`. Any such run holds an 8-byte word at a
// file offset that is a multiple of 8, so the 8-aligned words of each file are looked up among
// all 8-byte windows of the content, and each hit extended to 16 bytes both ways.
std::vector<std::string> FilesWithContent(const std::string& dir,
                                          const std::vector<uint8_t>& content) {
  std::vector<uint64_t> windows;
  for (size_t i = 0; i + 8 <= content.size(); ++i) {
    windows.push_back(LoadLE<uint64_t>(content.data() + i));
  }
  std::sort(windows.begin(), windows.end());
  std::vector<std::pair<std::string, std::string>> files;
  ReadTree(dir, files);
  std::vector<std::string> hits;
  for (const auto& [path, body] : files) {
    const auto* p = reinterpret_cast<const uint8_t*>(body.data());
    bool hit = false;
    for (size_t q = 0; q + 8 <= body.size() && !hit; q += 8) {
      if (!std::binary_search(windows.begin(), windows.end(), LoadLE<uint64_t>(p + q))) {
        continue;
      }
      // The runs [a, a + 16) that hold the word at q.
      for (size_t a = q >= 8 ? q - 8 : 0; a <= q && a + 16 <= body.size() && !hit; ++a) {
        hit = std::search(content.begin(), content.end(), p + a, p + a + 16) != content.end();
      }
    }
    if (hit) {
      hits.push_back(path);
    }
  }
  return hits;
}

TEST(EncryptedCacheTest, NoRunOfTheContentOnDisk) {
  Fixture fx;
  Fill(fx.config, fx.origin);
  auto index = LoadIndex(fx.Paths().idx());
  ASSERT_TRUE(index);
  EXPECT_TRUE(index->encrypted());
  EXPECT_GT(index->full_pages(), 0u);
  EXPECT_GT(index->fragments().size(), 0u);
  EXPECT_EQ(FilesWithContent(fx.config.dir, fx.bytes), std::vector<std::string>{});
  // The search finds the content in an unencrypted cache filled alike (it can see).
  Fixture plain;
  plain.config.master_key = nullptr;
  Fill(plain.config, plain.origin);
  EXPECT_FALSE(FilesWithContent(plain.config.dir, plain.bytes).empty());
  // And the encrypted cache serves it back from disk alone.
  auto offline = std::make_shared<MemoryOrigin>(fx.bytes);
  EXPECT_EQ(ReadChecked(fx.config, offline, fx.bytes, 1000, size_t{200} * 1024), 0u);
  EXPECT_EQ(offline->read_calls(), 0u);
}

// Copies `len` bytes of file `from` at `from_off` over file `to` at `to_off`.
void CopyBytes(const std::string& from,
               uint64_t from_off,
               const std::string& to,
               uint64_t to_off,
               size_t len) {
  std::vector<uint8_t> buf(len);
  auto in = Fd::Open(from, O_RDONLY);
  auto out = Fd::Open(to, O_RDWR);
  ASSERT_TRUE(in && out);
  ASSERT_TRUE(PreadFull(in->get(), buf.data(), len, from_off));
  ASSERT_TRUE(PwriteFull(out->get(), buf.data(), len, to_off));
}

TEST(EncryptedCacheTest, PageMovedToAnotherOffsetFailsAndIsRefetched) {
  Fixture fx;
  Fill(fx.config, fx.origin);
  CopyBytes(fx.Paths().data(), 2 * kPage, fx.Paths().data(), 3 * kPage, kPage);
  const uint64_t before = fx.origin->read_calls();
  EXPECT_EQ(ReadChecked(fx.config, fx.origin, fx.bytes, 3 * kPage, kPage), 1u);
  EXPECT_GT(fx.origin->read_calls(), before);
}

TEST(EncryptedCacheTest, PageCopiedFromAnotherEntryFails) {
  Fixture fx;
  Fill(fx.config, fx.origin);
  Fill(fx.config, fx.origin, kOtherUrl);  // the same bytes under another name
  CopyBytes(fx.Paths(kOtherUrl).data(), 5 * kPage, fx.Paths().data(), 5 * kPage, kPage);
  EXPECT_EQ(ReadChecked(fx.config, fx.origin, fx.bytes, 5 * kPage, kPage), 1u);
}

TEST(EncryptedCacheTest, PageOfAnOlderIncarnationFails) {
  Fixture fx;
  fx.config.revalidate_s = 0;
  Fill(fx.config, fx.origin);
  std::vector<uint8_t> old_page(kPage);
  {
    auto fd = Fd::Open(fx.Paths().data(), O_RDONLY);
    ASSERT_TRUE(PreadFull(fd->get(), old_page.data(), kPage, 7 * kPage));
  }
  // The origin's file changes: the entry is recreated (new epoch, new data key) and refilled.
  auto changed = fx.bytes;
  changed[7 * kPage + 5] ^= 0xFF;
  auto origin2 = std::make_shared<MemoryOrigin>(changed, 1700000100);
  Fill(fx.config, origin2);
  auto fd = Fd::Open(fx.Paths().data(), O_RDWR);
  ASSERT_TRUE(PwriteFull(fd->get(), old_page.data(), kPage, 7 * kPage));
  EXPECT_EQ(ReadChecked(fx.config, origin2, changed, 7 * kPage, kPage), 1u);
}

TEST(EncryptedCacheTest, EveryFlippedBitOfASealedPageOrFragmentIsDetected) {
  Fixture fx;
  Fill(fx.config, fx.origin);
  auto index = LoadIndex(fx.Paths().idx());
  ASSERT_TRUE(index);
  const auto& [page, frag] = *index->fragments().begin();
  struct Target {
    std::string file;
    uint64_t at;
    uint64_t read_off;
    size_t read_len;
  };
  const Target targets[] = {
      {fx.Paths().data(), 9 * kPage + 4095, 9 * kPage, kPage},
      {fx.Paths().data(), 10 * kPage, 10 * kPage, kPage},
      {fx.Paths().frag(), frag.offset + frag.length() / 2, page * kPage + frag.lo, frag.length()},
  };
  for (const Target& t : targets) {
    auto fd = Fd::Open(t.file, O_RDWR);
    uint8_t b = 0;
    ASSERT_TRUE(PreadFull(fd->get(), &b, 1, t.at));
    b ^= 0x10;
    ASSERT_TRUE(PwriteFull(fd->get(), &b, 1, t.at));
    EXPECT_EQ(ReadChecked(fx.config, fx.origin, fx.bytes, t.read_off, t.read_len), 1u) << t.at;
  }
}

TEST(EncryptedCacheTest, RekeyWhileAReaderReads) {
  Fixture fx;
  Fill(fx.config, fx.origin);
  auto cache = Cache::Create(fx.config);
  ASSERT_TRUE(cache);
  auto f = (*cache)->Open(kUrl, fx.origin);
  ASSERT_TRUE(f);
  std::atomic<bool> rekeyed{false};
  std::atomic<int> passes_after{0};
  std::atomic<bool> all_right{true};
  std::thread reader([&] {
    std::vector<uint8_t> got(fx.bytes.size());
    while (passes_after.load() < 3) {
      const bool after = rekeyed.load();
      if (!(*f)->Read(0, got) || got != fx.bytes) {
        all_right = false;
      }
      passes_after += after ? 1 : 0;
    }
  });
  auto outcome = RekeyEntry(fx.Paths(), *fx.config.master_key, *KeyOf(2));
  rekeyed = true;
  reader.join();
  ASSERT_TRUE(outcome) << outcome.error().ToString();
  EXPECT_EQ(*outcome, RekeyOutcome::kRewrapped);
  EXPECT_TRUE(all_right);
  (*f)->Close();
  ASSERT_TRUE((*cache)->Flush());
  cache->reset();  // publishes what the reader stored, keeping the new wrapping
  auto index = LoadIndex(fx.Paths().idx());
  ASSERT_TRUE(index);
  EXPECT_EQ(index->info().key_id, KeyOf(2)->id());
  // The new key opens every byte from disk alone; the old one no longer opens the entry.
  auto offline = std::make_shared<MemoryOrigin>(fx.bytes);
  EXPECT_EQ(ReadChecked(fx.Keyed(KeyOf(2)), offline, fx.bytes, 0, fx.bytes.size()), 0u);
  EXPECT_EQ(offline->read_calls(), 0u);
  auto old = Cache::Create(fx.config);
  ASSERT_TRUE(old);
  auto g = (*old)->Open(kUrl, fx.origin);
  ASSERT_TRUE(g);
  EXPECT_TRUE((*g)->pass_through());
}

TEST(EncryptedCacheTest, WrongOrMissingKeyReadsFromTheOrigin) {
  Fixture fx;
  Fill(fx.config, fx.origin);
  for (const Config& c : {fx.Keyed(KeyOf(3)), fx.Keyed(nullptr)}) {
    auto cache = Cache::Create(c);
    ASSERT_TRUE(cache);
    auto f = (*cache)->Open(kUrl, fx.origin);
    ASSERT_TRUE(f);
    EXPECT_TRUE((*f)->pass_through());
    std::vector<uint8_t> got(5000);
    const uint64_t before = fx.origin->read_calls();
    ASSERT_TRUE((*f)->Read(100, got));
    EXPECT_TRUE(std::equal(got.begin(), got.end(), fx.bytes.begin() + 100));
    EXPECT_GT(fx.origin->read_calls(), before);
    EXPECT_EQ((*cache)->counters().Get(Counter::kFailopenEvents), 1u);
  }
  // The entry was left for its key's holder.
  auto offline = std::make_shared<MemoryOrigin>(fx.bytes);
  EXPECT_EQ(ReadChecked(fx.config, offline, fx.bytes, 0, 4096), 0u);
  EXPECT_EQ(offline->read_calls(), 0u);
}

TEST(EncryptedCacheTest, KeyMakesPlaintextEntriesEncrypted) {
  Fixture fx;
  Fill(fx.Keyed(nullptr), fx.origin);
  ASSERT_FALSE(LoadIndex(fx.Paths().idx())->encrypted());
  Fill(fx.config, fx.origin);
  EXPECT_TRUE(LoadIndex(fx.Paths().idx())->encrypted());
  EXPECT_EQ(FilesWithContent(fx.config.dir, fx.bytes), std::vector<std::string>{});
}

TEST(EncryptedCacheTest, KeyFileThatIsNotPrivateStopsTheCache) {
  Fixture fx;
  const std::string path = fx.dir.path() + "/key";
  {
    auto fd = Fd::Open(path, O_WRONLY | O_CREAT, 0644);
    ASSERT_TRUE(fd);
    const KeyBytes k{};
    ASSERT_TRUE(PwriteFull(fd->get(), k.data(), k.size(), 0));
  }
  ::chmod(path.c_str(), 0644);
  Config c = fx.Keyed(nullptr);
  c.key_file = path;
  auto cache = Cache::Create(c);
  ASSERT_FALSE(cache);
  EXPECT_NE(cache.error().message().find("chmod 600"), std::string::npos);
}

}  // namespace
}  // namespace ferry::cache
