// Challenge-response authentication of every transfer connection (docs/format/transfer.md).
//
//   client -> HELLO(role, session, stream, client nonce)
//   server <- CHALLENGE(server nonce, token-required flag)
//   client -> AUTH(HMAC-SHA256(token, "ferry-xfer-v1 client proof" | role | stream | session |
//                              client nonce | server nonce))
//   server <- AUTH_OK(HMAC-SHA256(token, "ferry-xfer-v1 server proof" | same fields))
//             or ERROR(permission) and the connection closes.
// The token never crosses the wire; both nonces are fresh, so a recorded exchange cannot be
// replayed, and the client checks the server's proof too. A receiver without a token uses the
// empty key (and accepts only clients that also have none).
// Thread-safe (no shared state).
#pragma once

#include <span>
#include <string>

#include "base/result.h"
#include "xfer/net.h"
#include "xfer/protocol.h"

namespace ferry::xfer {

// Reads a token file: its bytes without trailing whitespace. Empty files are an error.
Result<std::string> ReadTokenFile(const std::string& path);

// Client side. Returns the RTT (us) of the CHALLENGE round trip.
Result<uint32_t> ClientHandshake(Conn& conn, const Hello& hello, std::span<const uint8_t> key);

// The client side in two halves, so that a data stream's first DATA can follow its AUTH
// without waiting a round trip for AUTH_OK: the receiver reads nothing past AUTH before it
// verified it. Begin sends HELLO, reads CHALLENGE and sends AUTH; Finish reads AUTH_OK and
// checks the receiver's proof, and must succeed before anything the receiver sends after it
// (ACKs) is believed.
struct PendingHandshake {
  Hello hello;
  Nonce server_nonce{};
  uint32_t rtt_us = 0;  // the CHALLENGE round trip
};
Result<PendingHandshake> BeginClientHandshake(Conn& conn,
                                              const Hello& hello,
                                              std::span<const uint8_t> key);
Status FinishClientHandshake(Conn& conn,
                             const PendingHandshake& pending,
                             std::span<const uint8_t> key);

// Server side: the authenticated HELLO, or kPermission after an ERROR was sent. A connection
// closed before sending one byte fails with kShortRead and the message kClosedBeforeHello (the
// sender's unused early connections do this; they are not worth a log line, anything else is).
inline constexpr std::string_view kClosedBeforeHello = "closed before HELLO";
Result<Hello> ServerHandshake(Conn& conn, std::span<const uint8_t> key);

inline std::span<const uint8_t> KeyBytes(const std::string& token) {
  return {reinterpret_cast<const uint8_t*>(token.data()), token.size()};
}

}  // namespace ferry::xfer
