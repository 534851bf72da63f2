// The order of the sender's first frames, checked against a hand-made receiver: what follows
// AUTH before AUTH_OK, and what a forged AUTH_OK does.
#include "xfer/handshake.h"

#include <poll.h>
#include <sys/socket.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "testing/testing.h"
#include "xfer/net.h"
#include "xfer/sender.h"
#include "xfer/test_files.h"

namespace ferry::xfer {
namespace {

// One sender's connections, told apart by their HELLO (the sender opens its data streams
// together with the control connection, so they may be accepted in any order).
class FakeReceiver {
 public:
  FakeReceiver() {
    auto l = Listen("127.0.0.1", 0);
    if (l) {
      listener_ = std::move(*l);
      port_ = LocalPort(listener_.get()).value_or(0);
    }
  }
  uint16_t port() const { return port_; }

  // Accepts connections until it holds the control connection and `data` streams; reads
  // their HELLOs. Bounded: at most 16 connections, 5 s each.
  bool AcceptSender(size_t data) {
    for (int i = 0; i < 16 && (!control_ || data_.size() < data); ++i) {
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, 5000) != 1) {
        return false;
      }
      auto c =
          std::make_unique<Conn>(Fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC)));
      if (!c->SetTimeouts(5000, 5000)) {
        return false;
      }
      auto payload = c->Expect(FrameType::kHello);
      if (!payload) {
        continue;  // a connection the sender closed unused
      }
      auto hello = DecodeHello(*payload);
      if (!hello) {
        return false;
      }
      if (hello->role == Role::kControl) {
        control_ = std::move(c);
        control_hello_ = *hello;
      } else {
        data_.push_back(std::move(c));
        data_hello_.push_back(*hello);
      }
    }
    return control_ && data_.size() >= data;
  }

  // The server's half after HELLO, without a token: CHALLENGE, then AUTH.
  static bool ChallengeAndReadAuth(Conn& c, const Nonce& nonce) {
    Challenge ch;
    ch.server_nonce = nonce;
    return c.SendFrame({.type = FrameType::kChallenge}, EncodeChallenge(ch))
           && c.Expect(FrameType::kAuth).has_value();
  }

  // Reads and drops what c still sends until it closes (bounded by the 5 s timeout).
  static void DrainUntilClosed(Conn& c) {
    uint8_t sink[4096];
    while (::recv(c.fd(), sink, sizeof sink, 0) > 0) {
    }
  }

  Conn& control() { return *control_; }
  const Hello& control_hello() const { return control_hello_; }
  Conn& data(size_t i) { return *data_[i]; }

 private:
  Fd listener_;
  uint16_t port_ = 0;
  std::unique_ptr<Conn> control_;
  Hello control_hello_;
  std::vector<std::unique_ptr<Conn>> data_;
  std::vector<Hello> data_hello_;
};

class XferHandMade : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = tmp_.File("f");
    testing::WriteFile(file_, testing::RandomBytes(100000, 2));
  }
  SendOptions Options(uint16_t port) {
    SendOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    o.paths = {file_};
    o.block_size = 64 * 1024;
    o.streams = 1;
    o.timeout_ms = 5000;
    o.on_notice = [this](std::string_view n) {
      notices_.emplace_back(n);
    };
    return o;
  }
  bool Noticed(const std::string& text) const {
    for (const std::string& n : notices_) {
      if (n.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  ferry::testing::TempDir tmp_;
  std::string file_;
  std::vector<std::string> notices_;
};

// The sender's first DATA follows its AUTH without waiting for AUTH_OK, and an AUTH_OK with a
// forged proof loses the stream, so the ACK after it is not believed.
TEST_F(XferHandMade, DataFollowsAuthAtOnceAndAForgedServerProofLosesTheStream) {
  FakeReceiver fake;
  ASSERT_NE(fake.port(), 0);
  bool data_before_auth_ok = false;
  std::thread server([&] {
    if (!fake.AcceptSender(1)) {
      return;
    }
    Conn& control = fake.control();
    Nonce nonce;
    nonce.fill(3);
    if (!FakeReceiver::ChallengeAndReadAuth(control, nonce)
        || !control.SendFrame({.type = FrameType::kAuthOk},
                              *ServerProof({}, fake.control_hello(), nonce))) {
      return;
    }
    // Bounded: at most 16 manifest chunks.
    for (int i = 0; i < 16; ++i) {
      FrameHeader h;
      if (!control.Expect(FrameType::kManifest, &h) || (h.flags & kManifestLast) != 0) {
        break;
      }
    }
    (void)control.SendFrame({.type = FrameType::kStateEnd});
    Conn& data = fake.data(0);
    nonce.fill(7);
    if (!FakeReceiver::ChallengeAndReadAuth(data, nonce)) {
      return;
    }
    auto h = data.RecvHeader();
    data_before_auth_ok = h.has_value() && h->type == FrameType::kData;
    if (!data_before_auth_ok) {
      return;
    }
    Digest256 forged{};
    (void)data.SendFrame({.type = FrameType::kAuthOk}, forged);
    (void)data.SendFrame({.type = FrameType::kAck, .file_id = h->file_id, .block = h->block});
    FakeReceiver::DrainUntilClosed(data);
    FakeReceiver::DrainUntilClosed(control);
  });
  auto r = Send(Options(fake.port()));
  server.join();
  EXPECT_TRUE(data_before_auth_ok);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("data streams were lost"), std::string::npos)
      << r.error().ToString();
  EXPECT_TRUE(Noticed("could not prove it holds the same token"))
      << ::testing::PrintToString(notices_);
}

// The manifest follows the control connection's AUTH without waiting for AUTH_OK (one round
// trip less before the receiver can let the data in), and a forged AUTH_OK ends the send
// before anything the receiver said after it is believed.
TEST_F(XferHandMade, ManifestFollowsAuthAtOnceAndAForgedServerProofEndsTheSend) {
  FakeReceiver fake;
  ASSERT_NE(fake.port(), 0);
  bool manifest_before_auth_ok = false;
  std::thread server([&] {
    if (!fake.AcceptSender(1)) {
      return;
    }
    Conn& control = fake.control();
    Nonce nonce;
    nonce.fill(5);
    if (!FakeReceiver::ChallengeAndReadAuth(control, nonce)) {
      return;
    }
    auto h = control.RecvHeader();
    manifest_before_auth_ok = h.has_value() && h->type == FrameType::kManifest;
    Digest256 forged{};
    (void)control.SendFrame({.type = FrameType::kAuthOk}, forged);
    (void)control.SendFrame({.type = FrameType::kStateEnd});
    FakeReceiver::DrainUntilClosed(control);
  });
  auto r = Send(Options(fake.port()));
  server.join();
  EXPECT_TRUE(manifest_before_auth_ok);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kPermission) << r.error().ToString();
  EXPECT_NE(r.error().message().find("could not prove it holds the same token"), std::string::npos)
      << r.error().ToString();
}

}  // namespace
}  // namespace ferry::xfer
