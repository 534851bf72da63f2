#include "base/log.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ferry::log {
namespace {

struct Captured {
  Level level;
  std::string component;
  std::string message;
};
std::vector<Captured>* g_lines = nullptr;

void CaptureSink(Level level, std::string_view component, std::string_view message) {
  g_lines->push_back({level, std::string(component), std::string(message)});
}

// Installs the capturing sink for one test and restores the process state after it.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = Threshold();
    g_lines = &lines_;
    SetSink(CaptureSink);
  }
  void TearDown() override {
    SetSink(nullptr);
    SetThreshold(saved_);
    g_lines = nullptr;
  }
  std::vector<Captured> lines_;
  Level saved_ = Level::kWarn;
};

TEST(LogLevel, ParsesEveryNameAndRejectsOthers) {
  Level l = Level::kOff;
  ASSERT_TRUE(ParseLevel("DEBUG", &l));
  EXPECT_EQ(l, Level::kDebug);
  ASSERT_TRUE(ParseLevel("info", &l));
  EXPECT_EQ(l, Level::kInfo);
  ASSERT_TRUE(ParseLevel("Warning", &l));
  EXPECT_EQ(l, Level::kWarn);
  ASSERT_TRUE(ParseLevel("error", &l));
  EXPECT_EQ(l, Level::kError);
  ASSERT_TRUE(ParseLevel("off", &l));
  EXPECT_EQ(l, Level::kOff);
  EXPECT_FALSE(ParseLevel("verbose", &l));
  EXPECT_FALSE(ParseLevel("", &l));
  EXPECT_EQ(l, Level::kOff);  // untouched on failure
}

TEST_F(LogTest, WritesOnlyAtOrAboveTheThreshold) {
  SetThreshold(Level::kInfo);
  FERRY_DEBUG("cache", "miss %d", 1);
  FERRY_INFO("cache", "opened %s", "f.root");
  FERRY_WARN("recv", "refused %s", "10.0.0.1");
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(lines_[0].level, Level::kInfo);
  EXPECT_EQ(lines_[0].component, "cache");
  EXPECT_EQ(lines_[0].message, "opened f.root");
  EXPECT_EQ(lines_[1].component, "recv");
  SetThreshold(Level::kOff);
  FERRY_WARN("recv", "dropped");
  Write(Level::kError, "x", "dropped too");
  EXPECT_EQ(lines_.size(), 2u);
}

TEST_F(LogTest, MacroDoesNotEvaluateArgumentsWhenOff) {
  SetThreshold(Level::kWarn);
  int evaluated = 0;
  auto count = [&] {
    return ++evaluated;
  };
  FERRY_DEBUG("cache", "%d", count());
  EXPECT_EQ(evaluated, 0);
  FERRY_WARN("cache", "%d", count());
  EXPECT_EQ(evaluated, 1);
}

TEST_F(LogTest, LongMessagesAreCutNotOverrun) {
  SetThreshold(Level::kDebug);
  std::string big(10000, 'x');
  FERRY_DEBUG("cache", "%s", big.c_str());
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_LT(lines_[0].message.size(), 2048u + 1);
  EXPECT_GT(lines_[0].message.size(), 2000u);
}

TEST(LogFormat, OneLineWithLevelAndComponent) {
  char buf[64];
  size_t n = FormatLine(buf, sizeof buf, Level::kWarn, "recv", "refused 1.2.3.4: bad magic");
  EXPECT_EQ(std::string(buf, n), "ferry warn recv: refused 1.2.3.4: bad magic");
  char tiny[8];
  n = FormatLine(tiny, sizeof tiny, Level::kInfo, "cache", "long message");
  EXPECT_EQ(n, 7u);
  EXPECT_EQ(std::string(tiny), "ferry i");
}

}  // namespace
}  // namespace ferry::log
