// Fuzz target: the transfer protocol's frame header parser and payload decoders
// (docs/format/transfer.md). Input: a frame as it arrives from the network (40-byte header, then
// payload bytes). A header that parses must re-encode to the same 40 bytes; the payload
// decoders must reject or decode any bytes without reading out of bounds, and what they decode
// must re-encode to bytes that decode to the same values.
#include <cstdint>
#include <cstring>
#include <span>

#include "xfer/protocol.h"

using namespace ferry::xfer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  auto h = ParseFrameHeader(in);
  if (h.has_value()) {
    uint8_t again[kFrameHeaderSize];
    EncodeFrameHeader(*h, std::span<uint8_t, kFrameHeaderSize>(again));
    if (std::memcmp(again, data, kFrameHeaderSize) != 0 || h->length > MaxPayload(h->type)) {
      __builtin_trap();
    }
  }
  std::span<const uint8_t> payload =
      size > kFrameHeaderSize ? in.subspan(kFrameHeaderSize) : std::span<const uint8_t>();
  if (auto m = DecodeManifest(payload); m.has_value()) {
    auto back = DecodeManifest(EncodeManifest(*m));
    if (!back.has_value() || back->entries.size() != m->entries.size()
        || back->block_size != m->block_size) {
      __builtin_trap();
    }
  }
  if (auto hello = DecodeHello(payload); hello.has_value()) {
    if (EncodeHello(*hello).size() != kHelloSize) {
      __builtin_trap();
    }
  }
  (void)DecodeChallenge(payload);
  if (auto b = DecodeBlockHashes(payload); b.has_value()) {
    if (EncodeBlockHashes(*b).size() != payload.size()) {
      __builtin_trap();
    }
  }
  (void)DecodeFileDone(payload);
  (void)DecodeU64(payload);
  (void)DecodeErrorMessage(payload, "peer: ");
  return 0;
}
