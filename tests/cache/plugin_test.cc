// Integration: the XrdCl plug-in in front of a real xrootd origin on 127.0.0.1.
// The plug-in is configured for every root:// URL of this process (XRD_PLUGINCONFDIR, set
// before XrdCl initialises); reads through XrdCl::File() are compared with the local files and
// with direct reads through XrdCl::File(false).
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <XrdCl/XrdClFile.hh>
#include <XrdCl/XrdClFileSystem.hh>
#include <gtest/gtest.h>

#include "cache/entry_store.h"
#include "cache/stats.h"
#include "cache/url.h"
#include "testing/testing.h"
#include "testing/xrootd_server.h"

namespace ferry::cache {
namespace {

std::string g_dir;
std::string g_cache_dir;

// XrdCl reads its plug-in configuration while the process starts (before main), so the
// environment is set up here and the test binary re-executes itself once with it.
class PluginEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (const char* dir = std::getenv("FERRY_CACHE_PLUGIN_TEST_DIR")) {  // NOLINT
      g_dir = dir;
      g_cache_dir = g_dir + "/cache";
      return;
    }
    char tmpl[] = "/tmp/ferry-cache-plugin-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl;
    const std::string conf_dir = dir + "/conf";
    ::mkdir(conf_dir.c_str(), 0755);
    std::ofstream(conf_dir + "/ferry.conf") << "url = root://*\n"
                                            << "lib = " << FERRY_PLUGIN_LIB << "\n"
                                            << "enable = true\n"
                                            << "dir = " << dir << "/cache\n"
                                            << "publish_ms = 20\nsync = 0\n";
    ::setenv("XRD_PLUGINCONFDIR", conf_dir.c_str(), 1);
    ::setenv("XRD_CONNECTIONRETRY", "1", 1);
    ::setenv("XRD_CONNECTIONWINDOW", "3", 1);
    ::setenv("XRD_REQUESTTIMEOUT", "30", 1);
    ::setenv("FERRY_CACHE_PLUGIN_TEST_DIR", dir.c_str(), 1);
    std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string a; std::getline(cmdline, a, '\0');) {
      args.push_back(a);
    }
    std::vector<char*> argv;
    for (std::string& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    FAIL() << "re-exec failed";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(g_dir, ec);
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new PluginEnvironment);

CounterValues Stats() {
  auto v = ReadStatsFile(g_cache_dir);
  return v ? *v : CounterValues{};
}
uint64_t Get(const CounterValues& v, Counter c) {
  return v[static_cast<size_t>(c)];
}

EntryPaths PathsOf(const std::string& url) {
  return PathsFor(g_cache_dir, EntryKey(*NormalizeUrl(url)));
}

// Waits (bounded) until the published index holds at least `bytes`: the write-behind thread
// stores and publishes after the reads returned.
bool WaitPublished(const std::string& url, uint64_t bytes) {
  for (int i = 0; i < 500; ++i) {
    auto index = LoadIndex(PathsOf(url).idx());
    if (index && index->held_bytes() >= bytes) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::vector<XrdCl::ChunkInfo> Pattern(uint64_t size, uint64_t seed, std::vector<char>& buf);

// Distinct bytes one Pass() reads.
uint64_t PassBytes(uint64_t size) {
  std::vector<char> buf;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& c : Pattern(size, 5, buf)) {
    spans.emplace_back(c.offset, c.offset + c.length);
  }
  spans.emplace_back(777777, 777777 + 100000);
  spans.emplace_back(size - 50, size);
  spans.emplace_back(3000123, 3000123 + 30000);
  std::sort(spans.begin(), spans.end());
  uint64_t total = 0;
  uint64_t end = 0;
  for (const auto& [a, b] : spans) {
    const uint64_t from = std::max(a, end);
    total += b > from ? b - from : 0;
    end = std::max(end, b);
  }
  return total;
}

struct Data {
  testing::TempDir dir;
  std::vector<uint8_t> bytes = testing::PseudoRandomBytes(5 * 1024 * 1024 + 77, 21);
  Data() { testing::WriteWholeFile(dir.File("a.bin"), bytes); }
};

std::vector<XrdCl::ChunkInfo> Pattern(uint64_t size, uint64_t seed, std::vector<char>& buf) {
  std::mt19937_64 rng(seed);
  std::vector<XrdCl::ChunkInfo> chunks;
  const uint64_t slot = size / 64;
  size_t total = 0;
  for (int i = 0; i < 64; ++i) {
    const uint32_t len = 2048 + static_cast<uint32_t>(rng() % 14336);
    chunks.emplace_back(static_cast<uint64_t>(i) * slot + rng() % (slot - len), len, nullptr);
    total += len;
  }
  buf.assign(total, 0);
  size_t pos = 0;
  for (auto& c : chunks) {
    c.buffer = buf.data() + pos;
    pos += c.length;
  }
  return chunks;
}

// One pass: vector read, reads (one at the end of the file), a page read. Returns the page
// read's checksums.
std::vector<uint32_t> Pass(const std::string& url, const std::vector<uint8_t>& want) {
  XrdCl::File f;  // plug-ins enabled
  EXPECT_TRUE(f.Open(url, XrdCl::OpenFlags::Read).IsOK());
  XrdCl::StatInfo* info = nullptr;
  EXPECT_TRUE(f.Stat(false, info).IsOK());
  EXPECT_EQ(info->GetSize(), want.size());
  delete info;
  std::vector<char> buf;
  auto chunks = Pattern(want.size(), 5, buf);
  XrdCl::VectorReadInfo* vinfo = nullptr;
  XrdCl::XRootDStatus st = f.VectorRead(chunks, nullptr, vinfo);
  EXPECT_TRUE(st.IsOK()) << st.ToString();
  if (vinfo != nullptr) {
    EXPECT_EQ(vinfo->GetChunks().size(), chunks.size());
    delete vinfo;
  }
  for (const auto& c : chunks) {
    EXPECT_EQ(0, std::memcmp(c.buffer, want.data() + c.offset, c.length)) << c.offset;
  }
  std::vector<uint8_t> out(100000);
  uint32_t got = 0;
  EXPECT_TRUE(f.Read(777777, 100000, out.data(), got).IsOK());
  EXPECT_EQ(got, 100000u);
  EXPECT_EQ(0, std::memcmp(out.data(), want.data() + 777777, 100000));
  EXPECT_TRUE(f.Read(want.size() - 50, 100000, out.data(), got).IsOK());
  EXPECT_EQ(got, 50u);
  EXPECT_EQ(0, std::memcmp(out.data(), want.data() + want.size() - 50, 50));
  std::vector<uint32_t> cksums;
  EXPECT_TRUE(f.PgRead(3000000 + 123, 30000, out.data(), cksums, got).IsOK());
  EXPECT_EQ(got, 30000u);
  EXPECT_EQ(0, std::memcmp(out.data(), want.data() + 3000123, 30000));
  EXPECT_TRUE(f.Close().IsOK());
  return cksums;
}

TEST(CachePluginTest, BytesMatchTheOriginAndTheSecondPassIsLocal) {
  Data data;
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, data.dir.path());
  const std::string url = origin->Url("a.bin");
  const CounterValues s0 = Stats();
  const std::vector<uint32_t> cold = Pass(url, data.bytes);
  ASSERT_TRUE(WaitPublished(url, PassBytes(data.bytes.size())));
  const CounterValues s1 = Stats();
  EXPECT_GT(Get(s1, Counter::kMisses), Get(s0, Counter::kMisses));
  EXPECT_GT(Get(s1, Counter::kOriginRequests), Get(s0, Counter::kOriginRequests));
  const std::vector<uint32_t> warm = Pass(url, data.bytes);
  const CounterValues s2 = Stats();
  EXPECT_EQ(Get(s2, Counter::kMisses), Get(s1, Counter::kMisses));
  EXPECT_EQ(Get(s2, Counter::kOriginRequests), Get(s1, Counter::kOriginRequests));
  EXPECT_EQ(Get(s2, Counter::kHits) - Get(s1, Counter::kHits), 64u + 3u);
  // The page checksums equal what the origin computes for kXR_pgread.
  XrdCl::File direct(false);
  ASSERT_TRUE(direct.Open(url, XrdCl::OpenFlags::Read).IsOK());
  std::vector<uint8_t> out(30000);
  std::vector<uint32_t> expected;
  uint32_t got = 0;
  ASSERT_TRUE(direct.PgRead(3000123, 30000, out.data(), expected, got).IsOK());
  EXPECT_EQ(cold, expected);
  EXPECT_EQ(warm, expected);
  EXPECT_TRUE(direct.Close().IsOK());
}

TEST(CachePluginTest, CachedBytesNeedNoOrigin) {
  Data data;
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, data.dir.path());
  const std::string url = origin->Url("a.bin");
  Pass(url, data.bytes);
  ASSERT_TRUE(WaitPublished(url, PassBytes(data.bytes.size())));
  origin->Stop();
  // Open, stat and cached reads succeed with the origin gone.
  Pass(url, data.bytes);
  XrdCl::File f;
  ASSERT_TRUE(f.Open(url, XrdCl::OpenFlags::Read).IsOK());
  std::vector<uint8_t> out(4096);
  uint32_t got = 0;
  // Bytes never read need the origin: its error comes back (no crash, no cache error).
  XrdCl::XRootDStatus st = f.Read(10, 4096, out.data(), got);
  EXPECT_FALSE(st.IsOK());
  XrdCl::XRootDStatus closed = f.Close();
  (void)closed;
}

TEST(CachePluginTest, WriteModeOpenDropsTheCachedCopy) {
  Data data;
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, data.dir.path());
  const std::string url = origin->Url("a.bin");
  Pass(url, data.bytes);
  ASSERT_TRUE(WaitPublished(url, PassBytes(data.bytes.size())));
  XrdCl::File f;
  // The export is read-only: the open fails at the origin, but the copy is dropped first.
  XrdCl::XRootDStatus opened = f.Open(url, XrdCl::OpenFlags::Update);
  (void)opened;
  EXPECT_EQ(StampOf(PathsOf(url).idx()).ino, 0u);
  if (f.IsOpen()) {
    XrdCl::XRootDStatus closed = f.Close();
    (void)closed;
  }
}

TEST(CachePluginTest, FileSystemCallsAreForwarded) {
  Data data;
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, data.dir.path());
  XrdCl::FileSystem fs(XrdCl::URL(origin->BaseUrl()));
  XrdCl::StatInfo* info = nullptr;
  ASSERT_TRUE(fs.Stat("/a.bin", info).IsOK());
  EXPECT_EQ(info->GetSize(), data.bytes.size());
  delete info;
}

TEST(CachePluginTest, XrdcpCopiesThroughThePlugin) {
  Data data;
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, data.dir.path());
  const std::string url = origin->Url("a.bin");
  for (int round = 0; round < 2; ++round) {  // cold, then warm (PgRead from the cache)
    const std::string out = data.dir.File("copy" + std::to_string(round) + ".bin");
    const std::string cmd = "timeout 60 xrdcp -s -f '" + url + "' '" + out + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;  // NOLINT(concurrency-mt-unsafe)
    EXPECT_EQ(testing::ReadWholeFile(out), data.bytes);
  }
}

}  // namespace
}  // namespace ferry::cache
