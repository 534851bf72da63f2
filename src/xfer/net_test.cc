#include "xfer/net.h"

#include <gtest/gtest.h>

namespace ferry::xfer {
namespace {

// A port on 127.0.0.1 that nothing listens on (bound, then closed).
uint16_t ClosedPort() {
  auto l = Listen("127.0.0.1", 0);
  EXPECT_TRUE(l.has_value());
  return l ? LocalPort(l->get()).value_or(0) : 0;
}

TEST(XferNet, ResolveGivesEveryAddressOrNotFound) {
  auto a = Resolve("127.0.0.1", 7);
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ((*a)[0].where, "127.0.0.1:7");
  EXPECT_EQ((*a)[0].family, AF_INET);
  auto none = Resolve("no-such-host.invalid", 7);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), ErrorCode::kNotFound);
}

TEST(XferNet, PendingConnectsFinishInAnyOrderOrNameTheirFailure) {
  auto l = Listen("127.0.0.1", 0);
  ASSERT_TRUE(l.has_value());
  uint16_t port = LocalPort(l->get()).value_or(0);
  auto to = Resolve("127.0.0.1", port);
  ASSERT_TRUE(to.has_value());
  // Several connects in flight at once; the kernel completes them in the listen backlog.
  std::vector<PendingConnect> pending;
  for (int i = 0; i < 4; ++i) {
    auto p = PendingConnect::Start((*to)[0]);
    ASSERT_TRUE(p.has_value()) << p.error().ToString();
    EXPECT_TRUE(p->valid());
    pending.push_back(std::move(*p));
  }
  for (int i = 3; i >= 0; --i) {
    auto c = pending[static_cast<size_t>(i)].Finish(2000);
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    EXPECT_FALSE(pending[static_cast<size_t>(i)].valid());
    EXPECT_TRUE((*c)->SetSendBuffer(1 << 20));
    EXPECT_GT((*c)->SendBufferBytes(), 0);
  }
  auto again = pending[0].Finish(10);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), ErrorCode::kInvalidArgument);

  auto closed = Resolve("127.0.0.1", ClosedPort());
  ASSERT_TRUE(closed.has_value());
  auto p = PendingConnect::Start((*closed)[0]);
  ASSERT_TRUE(p.has_value());
  auto refused = p->Finish(2000);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().sys_errno(), ECONNREFUSED) << refused.error().ToString();
  EXPECT_NE(refused.error().message().find("127.0.0.1:"), std::string::npos);

  auto bad = PendingConnect::Start((*to)[0], 0, 0, "no-such-congestion-control");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
}

TEST(XferNet, ConnectAnySkipsAddressesThatDoNotAnswer) {
  auto l = Listen("127.0.0.1", 0);
  ASSERT_TRUE(l.has_value());
  auto closed = Resolve("127.0.0.1", ClosedPort());
  auto open = Resolve("127.0.0.1", LocalPort(l->get()).value_or(0));
  ASSERT_TRUE(closed.has_value() && open.has_value());
  std::vector<SockAddr> both = {(*closed)[0], (*open)[0]};
  auto c = Conn::ConnectAny(both, 2000);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  std::vector<SockAddr> only_closed = {(*closed)[0]};
  auto e = Conn::ConnectAny(only_closed, 2000);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().sys_errno(), ECONNREFUSED);
}

}  // namespace
}  // namespace ferry::xfer
