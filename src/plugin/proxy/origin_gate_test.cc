#include "plugin/proxy/origin_gate.h"

#include <cerrno>
#include <thread>

#include <gtest/gtest.h>

#include "cache/cache.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::proxy {
namespace {

// An origin whose reads block until Release() (a stalled server), or answer at once; or fail
// every read with a timeout (a server that never answers within XrdCl's timeout).
class StallingOrigin final : public cache::Origin {
 public:
  enum class Mode { kAnswer, kBlock, kTimeOut };
  explicit StallingOrigin(Mode mode) : mode_(mode) {}

  Result<cache::OriginInfo> Stat() override { return cache::OriginInfo{1 << 20, 1}; }
  void Read(std::span<cache::OriginRead> reads) override {
    {
      MutexLock lock(mu_);
      ++reads_;
      cv_.NotifyAll();
      while (mode_ == Mode::kBlock && !released_) {
        cv_.Wait(mu_);
      }
    }
    for (cache::OriginRead& read : reads) {
      for (io::ReadRequest& r : read.ranges) {
        if (mode_ == Mode::kTimeOut) {
          r.status = Error(ErrorCode::kTimeout, "no answer");
        } else {
          std::fill(r.dest.begin(), r.dest.end(), uint8_t{7});
          r.status = OkStatus();
        }
      }
    }
  }
  void WaitForReads(int n) {
    MutexLock lock(mu_);
    while (reads_ < n) {
      cv_.Wait(mu_);
    }
  }
  void Release() {
    MutexLock lock(mu_);
    released_ = true;
    cv_.NotifyAll();
  }
  int reads() {
    MutexLock lock(mu_);
    return reads_;
  }

 private:
  const Mode mode_;
  Mutex mu_;
  CondVar cv_;
  int reads_ FERRY_GUARDED_BY(mu_) = 0;
  bool released_ FERRY_GUARDED_BY(mu_) = false;
};

Status ReadOne(cache::Origin& origin, std::vector<uint8_t>& buf) {
  io::ReadRequest r{0, buf, {}};
  cache::OriginRead read{0, std::span<io::ReadRequest>(&r, 1)};
  origin.Read(std::span<cache::OriginRead>(&read, 1));
  return r.status;
}

TEST(OriginGateTest, FullGateTurnsAwayAfterItsWaitWhileAnotherOriginServes) {
  OriginGate stalled_gate("stalled:1094", /*limit=*/1, /*wait_ms=*/50);
  OriginGate other_gate("other:1094", 1, 50);
  auto stalled = std::make_shared<StallingOrigin>(StallingOrigin::Mode::kBlock);
  GatedOrigin a(stalled, stalled_gate);
  GatedOrigin b(std::make_shared<StallingOrigin>(StallingOrigin::Mode::kAnswer), other_gate);

  std::vector<uint8_t> held(4096);
  Status first;
  std::thread reader([&] { first = ReadOne(a, held); });
  stalled->WaitForReads(1);  // the only slot is taken by a read the origin does not answer

  std::vector<uint8_t> buf(4096);
  Status turned = ReadOne(a, buf);
  ASSERT_FALSE(turned);
  EXPECT_TRUE(IsOriginStalled(turned.error())) << turned.error().ToString();
  EXPECT_NE(turned.error().message().find("stalled:1094"), std::string::npos);
  EXPECT_FALSE(a.Stat());  // a Stat (an open) needs a slot too
  // The other origin has its own slots.
  EXPECT_TRUE(ReadOne(b, buf));
  EXPECT_EQ(buf[0], 7);

  const GateCounts counts = stalled_gate.Counts();
  EXPECT_EQ(counts.in_flight, 1u);
  EXPECT_EQ(counts.waited, 2u);
  EXPECT_EQ(counts.turned_away, 2u);
  EXPECT_EQ(stalled->reads(), 1);  // the turned-away reads never reached the origin

  stalled->Release();
  reader.join();
  EXPECT_TRUE(first);
  EXPECT_TRUE(ReadOne(a, buf));  // the origin answers again: the gate lets reads through
  EXPECT_EQ(stalled_gate.Counts().in_flight, 0u);
}

TEST(OriginGateTest, UnansweredReadFailsOnceInsteadOfBeingRetried) {
  testing::TempDir tmp;
  cache::Config c = testing::CacheTestConfig(tmp.path() + "/c");
  c.readahead = false;
  c.retries = 3;
  auto cache = *cache::Cache::Create(c);
  OriginGate gate("silent:1094", 4, 50);
  auto silent = std::make_shared<StallingOrigin>(StallingOrigin::Mode::kTimeOut);
  auto f = cache->Open("root://silent:1094//f", std::make_shared<GatedOrigin>(silent, gate));
  ASSERT_TRUE(f);
  std::vector<uint8_t> buf(8192);
  Status st = (*f)->Read(0, buf);
  ASSERT_FALSE(st);
  EXPECT_TRUE(IsOriginStalled(st.error())) << st.error().ToString();
  EXPECT_EQ(st.error().sys_errno(), ETIMEDOUT);
  EXPECT_EQ(silent->reads(), 1);  // a transient timeout would have been sent 1 + 3 times
  EXPECT_EQ(gate.Counts().unanswered, 1u);
  (*f)->Close();
}

}  // namespace
}  // namespace ferry::proxy
