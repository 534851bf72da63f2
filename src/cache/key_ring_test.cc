// The master key from the kernel keyring (key_ring.h): a key added to this process's keyring is
// the same master key as the file of its bytes (a cache filled under one reads under the other);
// a missing key, or one of the wrong size, is refused saying how to add one.
#include "cache/key_ring.h"

#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cache/cache.h"
#include "cache/page_seal.h"
#include "cache/testing/memory_origin.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::cache {
namespace {

constexpr const char* kUrl = "root://origin.example:1094//data/keyring.root";

// A "user" key in this process's keyring, removed at the end of the test.
class ProcessKey {
 public:
  ProcessKey(const std::string& name, std::span<const uint8_t> payload) {
    id_ = ::syscall(SYS_add_key, "user", name.c_str(), payload.data(), payload.size(),
                    KEY_SPEC_PROCESS_KEYRING);
    errno_ = id_ < 0 ? errno : 0;
  }
  ~ProcessKey() {
    if (id_ >= 0) {
      ::syscall(SYS_keyctl, KEYCTL_INVALIDATE, id_);
    }
  }
  ProcessKey(const ProcessKey&) = delete;
  ProcessKey& operator=(const ProcessKey&) = delete;
  bool added() const { return id_ >= 0; }
  int error() const { return errno_; }

 private:
  long id_ = -1;
  int errno_ = 0;
};

std::string UniqueName(const char* what) {
  return std::string("ferry-test-") + what + "-" + std::to_string(::getpid());
}

#define FERRY_REQUIRE_KEY(k)                                                              \
  if (!(k).added()) {                                                                     \
    GTEST_SKIP() << "no kernel keyring here (add_key: " << ErrnoText((k).error()) << ")"; \
  }

TEST(KeyRing, AKeyringKeyIsTheMasterKeyOfItsBytes) {
  KeyBytes bytes{};
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  }
  const std::string name = UniqueName("master");
  ProcessKey key(name, bytes);
  FERRY_REQUIRE_KEY(key);
  EXPECT_TRUE(IsKeyringSource("keyring:" + name));
  EXPECT_FALSE(IsKeyringSource("/etc/ferry/keyring:x"));
  auto loaded = MasterKey::Load("keyring:" + name);
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  EXPECT_EQ(loaded->id(), MasterKey::FromBytes(bytes).id());

  // A cache filled under the keyring's key reads, sealed pages verified, under its bytes.
  testing::TempDir dir;
  const std::vector<uint8_t> data = testing::PseudoRandomBytes(300000, 5);
  auto origin = std::make_shared<MemoryOrigin>(data);
  Config c = testing::CacheTestConfig(dir.path() + "/cache");
  c.replica = ReplicaMode::kOff;
  c.key_file = "keyring:" + name;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      c.key_file.clear();
      c.master_key = std::make_shared<const MasterKey>(MasterKey::FromBytes(bytes));
    }
    auto cache = Cache::Create(c);
    ASSERT_TRUE(cache) << cache.error().ToString();
    auto f = (*cache)->Open(kUrl, origin);
    ASSERT_TRUE(f) << f.error().ToString();
    std::vector<uint8_t> got(data.size());
    ASSERT_TRUE((*f)->Read(0, got));
    EXPECT_EQ(got, data);
    (*f)->Close();
    ASSERT_TRUE((*cache)->Flush());
    EXPECT_EQ((*cache)->counters().Get(Counter::kCrcFailures), 0u);
  }
  EXPECT_EQ(origin->bytes(), data.size());  // the second pass was served from the cache
}

TEST(KeyRing, AMissingOrMisSizedKeyIsRefusedSayingHowToAddOne) {
  const std::string name = UniqueName("short");
  const std::vector<uint8_t> sixteen(16, 0x42);
  ProcessKey key(name, sixteen);
  FERRY_REQUIRE_KEY(key);
  auto shortkey = MasterKey::Load("keyring:" + name);
  ASSERT_FALSE(shortkey);
  EXPECT_EQ(shortkey.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(shortkey.error().ToString().find("exactly 32 bytes (it has 16)"), std::string::npos)
      << shortkey.error().ToString();

  auto missing = MasterKey::Load("keyring:" + UniqueName("absent"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().ToString().find("keyctl padd user"), std::string::npos)
      << missing.error().ToString();
  EXPECT_FALSE(MasterKey::Load("keyring:"));
}

}  // namespace
}  // namespace ferry::cache
