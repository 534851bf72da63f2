#include "plugin/proxy/idle_pool.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ferry::proxy {
namespace {

struct FakeHandle {
  explicit FakeHandle(int i) : id(i) {}
  int id;
};

// A pool whose closer records the ids it closed.
struct Fixture {
  explicit Fixture(size_t max_idle = 4, int64_t idle_ms = 1000)
      : pool(max_idle, idle_ms, [this](const std::shared_ptr<FakeHandle>& h) {
          closed.push_back(h->id);
        }) {}
  std::vector<int> closed;
  IdlePool<FakeHandle> pool;
};

TEST(IdlePool, ReusesAHandleWithinTheIdleTime) {
  Fixture f;
  auto h = std::make_shared<FakeHandle>(1);
  f.pool.Put("root://o//a", h, 100);
  EXPECT_EQ(f.pool.Take("root://o//b", 200), nullptr);  // another file
  EXPECT_EQ(f.pool.Take("root://o//a", 1099), h);
  EXPECT_EQ(f.pool.reused(), 1u);
  EXPECT_EQ(f.pool.idle(), 0u);
  EXPECT_EQ(f.pool.Take("root://o//a", 1099), nullptr);  // taken: not handed out twice
  EXPECT_TRUE(f.closed.empty());
}

TEST(IdlePool, AnExpiredHandleIsClosedNotReused) {
  Fixture f;
  f.pool.Put("root://o//a", std::make_shared<FakeHandle>(1), 100);
  EXPECT_EQ(f.pool.Take("root://o//a", 1100), nullptr);
  EXPECT_EQ(f.closed, std::vector<int>{1});
  EXPECT_EQ(f.pool.expired(), 1u);
  EXPECT_EQ(f.pool.reused(), 0u);
}

TEST(IdlePool, SweepClosesExpiredHandlesOldestFirst) {
  Fixture f;
  f.pool.Put("root://o//a", std::make_shared<FakeHandle>(1), 100);
  f.pool.Put("root://o//b", std::make_shared<FakeHandle>(2), 500);
  EXPECT_EQ(f.pool.Sweep(1099), 2u);
  EXPECT_EQ(f.pool.Sweep(1100), 1u);
  EXPECT_EQ(f.closed, std::vector<int>{1});
  EXPECT_EQ(f.pool.Sweep(5000), 0u);
  EXPECT_EQ(f.closed, (std::vector<int>{1, 2}));
}

TEST(IdlePool, OneHandlePerUrlAndACap) {
  Fixture f(/*max_idle=*/2);
  f.pool.Put("root://o//a", std::make_shared<FakeHandle>(1), 100);
  f.pool.Put("root://o//a", std::make_shared<FakeHandle>(2), 110);  // replaces 1
  EXPECT_EQ(f.closed, std::vector<int>{1});
  f.pool.Put("root://o//b", std::make_shared<FakeHandle>(3), 120);
  f.pool.Put("root://o//c", std::make_shared<FakeHandle>(4), 130);  // over the cap: 2 goes
  EXPECT_EQ(f.closed, (std::vector<int>{1, 2}));
  EXPECT_EQ(f.pool.idle(), 2u);
  EXPECT_EQ(f.pool.Take("root://o//a", 140), nullptr);
  EXPECT_EQ(f.pool.Take("root://o//c", 140)->id, 4);
}

TEST(IdlePool, ZeroIdleTimeTurnsReuseOff) {
  Fixture f(/*max_idle=*/4, /*idle_ms=*/0);
  f.pool.Put("root://o//a", std::make_shared<FakeHandle>(1), 100);
  EXPECT_EQ(f.closed, std::vector<int>{1});
  EXPECT_EQ(f.pool.Take("root://o//a", 100), nullptr);
}

TEST(IdlePool, CloseAllClosesEveryHandleAndLaterPuts) {
  Fixture f;
  f.pool.Put("root://o//a", std::make_shared<FakeHandle>(1), 100);
  f.pool.Put("root://o//b", std::make_shared<FakeHandle>(2), 100);
  f.pool.CloseAll();
  EXPECT_EQ(f.closed, (std::vector<int>{1, 2}));
  f.pool.Put("root://o//c", std::make_shared<FakeHandle>(3), 200);
  EXPECT_EQ(f.closed, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(f.pool.idle(), 0u);
}

TEST(IdlePool, ConcurrentTakesHandOutAHandleOnce) {
  std::atomic<int> closed{0};
  IdlePool<FakeHandle> pool(64, 1'000'000, [&](const std::shared_ptr<FakeHandle>&) { ++closed; });
  std::atomic<int> taken{0};
  for (int round = 0; round < 200; ++round) {
    pool.Put("root://o//a", std::make_shared<FakeHandle>(round), round);
    std::vector<std::thread> threads;
    threads.reserve(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        if (pool.Take("root://o//a", round)) {
          ++taken;
        }
      });
    }
    for (std::thread& t : threads) {
      t.join();
    }
  }
  EXPECT_EQ(taken.load(), 200);
  EXPECT_EQ(closed.load(), 0);
}

}  // namespace
}  // namespace ferry::proxy
