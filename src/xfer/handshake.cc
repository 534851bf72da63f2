#include "xfer/handshake.h"

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

namespace ferry::xfer {

Result<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorCode::kNotFound, "cannot read token file " + path);
  }
  std::string token;
  char c;
  while (token.size() <= 4096 && in.get(c)) {
    token.push_back(c);
  }
  if (token.size() > 4096) {
    return InvalidArgumentError("token file " + path + " is larger than 4 KiB");
  }
  while (!token.empty()
         && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '
             || token.back() == '\t')) {
    token.pop_back();
  }
  if (token.empty()) {
    return InvalidArgumentError("token file " + path + " is empty");
  }
  return token;
}

Result<uint32_t> ClientHandshake(Conn& conn, const Hello& hello, std::span<const uint8_t> key) {
  PendingHandshake pending = FERRY_TRY(BeginClientHandshake(conn, hello, key));
  FERRY_TRY(FinishClientHandshake(conn, pending, key));
  return pending.rtt_us;
}

Result<PendingHandshake> BeginClientHandshake(Conn& conn,
                                              const Hello& hello,
                                              std::span<const uint8_t> key) {
  auto t0 = std::chrono::steady_clock::now();
  FERRY_TRY(conn.SendFrame({.type = FrameType::kHello}, EncodeHello(hello)));
  auto payload = FERRY_TRY(conn.Expect(FrameType::kChallenge));
  auto rtt =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  Challenge ch = FERRY_TRY(DecodeChallenge(payload));
  if ((ch.server_flags & 1) != 0 && key.empty()) {
    return Error(ErrorCode::kPermission, "the receiver requires a token (--token-file)");
  }
  Digest256 proof = FERRY_TRY(ClientProof(key, hello, ch.server_nonce));
  FERRY_TRY(conn.SendFrame({.type = FrameType::kAuth}, proof));
  return PendingHandshake{hello, ch.server_nonce, static_cast<uint32_t>(rtt.count())};
}

Status FinishClientHandshake(Conn& conn,
                             const PendingHandshake& pending,
                             std::span<const uint8_t> key) {
  auto ok = conn.Expect(FrameType::kAuthOk);
  if (!ok) {
    if (ok.error().code() == ErrorCode::kPermission) {
      return Error(ErrorCode::kPermission,
                   "the receiver refused the token: " + ok.error().message());
    }
    return std::move(ok).error();
  }
  if (ok->size() != 32) {
    return CorruptionError("malformed AUTH_OK");
  }
  Digest256 server_proof;
  std::copy(ok->begin(), ok->end(), server_proof.begin());
  Digest256 expected = FERRY_TRY(ServerProof(key, pending.hello, pending.server_nonce));
  if (!MacEqual(server_proof, expected)) {
    return Error(ErrorCode::kPermission, "the receiver could not prove it holds the same token");
  }
  return OkStatus();
}

Result<Hello> ServerHandshake(Conn& conn, std::span<const uint8_t> key) {
  auto first = conn.Expect(FrameType::kHello);
  if (!first && first.error().code() == ErrorCode::kShortRead
      && first.error().message() == kConnectionClosed) {
    return Error(ErrorCode::kShortRead, std::string(kClosedBeforeHello));
  }
  auto payload = FERRY_TRY(std::move(first));
  Hello hello = FERRY_TRY(DecodeHello(payload));
  Challenge ch;
  FERRY_TRY(RandomBytes(ch.server_nonce));
  ch.server_flags = key.empty() ? 0 : 1;
  FERRY_TRY(conn.SendFrame({.type = FrameType::kChallenge}, EncodeChallenge(ch)));
  auto auth = FERRY_TRY(conn.Expect(FrameType::kAuth));
  Digest256 got{};
  if (auth.size() == got.size()) {
    std::copy(auth.begin(), auth.end(), got.begin());
  }
  Digest256 expected = FERRY_TRY(ClientProof(key, hello, ch.server_nonce));
  if (auth.size() != got.size() || !MacEqual(got, expected)) {
    // A short pause makes guessing expensive without holding resources for long.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)conn.SendFrame({.type = FrameType::kError},
                         EncodeErrorMessage(ErrorCode::kPermission,
                                            "authentication failed (wrong or missing token)"));
    return Error(ErrorCode::kPermission, "client failed authentication");
  }
  Digest256 proof = FERRY_TRY(ServerProof(key, hello, ch.server_nonce));
  FERRY_TRY(conn.SendFrame({.type = FrameType::kAuthOk}, proof));
  return hello;
}

}  // namespace ferry::xfer
