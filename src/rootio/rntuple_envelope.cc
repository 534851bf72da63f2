#include "rootio/rntuple_envelope.h"

#include <string>

#include "base/endian.h"
#include "base/hash.h"
#include "codec/compression.h"
#include "rootio/rntuple_blob.h"

namespace ferry::rootio {

Status VerifyEnvelope(std::span<const uint8_t> bytes, EnvelopeType type, std::string_view what) {
  if (bytes.size() < kEnvelopePreamble + kEnvelopeChecksumSize) {
    return CorruptionError(std::string(what) + ": " + std::to_string(bytes.size())
                           + " bytes, too short for an envelope");
  }
  auto head = LoadLE<uint64_t>(bytes.data());
  auto type_id = static_cast<uint16_t>(head & ((uint64_t{1} << kEnvelopeTypeBits) - 1));
  uint64_t length = head >> kEnvelopeTypeBits;
  if (type_id != static_cast<uint16_t>(type)) {
    return CorruptionError(std::string(what) + ": envelope type " + std::to_string(type_id)
                           + ", expected " + std::to_string(static_cast<uint16_t>(type)));
  }
  if (length != bytes.size()) {
    return CorruptionError(std::string(what) + ": envelope length " + std::to_string(length)
                           + " differs from the " + std::to_string(bytes.size()) + " read");
  }
  size_t body = bytes.size() - kEnvelopeChecksumSize;
  if (LoadLE<uint64_t>(bytes.data() + body) != hash::Xxh3(bytes.first(body))) {
    return CorruptionError(std::string(what) + ": checksum mismatch");
  }
  return OkStatus();
}

Result<Envelope> ReadEnvelope(io::ByteSource& source,
                              const EnvelopeLink& link,
                              EnvelopeType type,
                              uint64_t max_key_size,
                              std::string_view what) {
  // Every compression block has a 9-byte header and expands to at most 0xFFFFFF bytes.
  uint64_t blocks = link.locator.size / codec::kBlockHeaderSize;
  if (link.length != link.locator.size && link.length > blocks * codec::kMaxBlockSize) {
    return CorruptionError(std::string(what) + ": " + std::to_string(link.locator.size)
                           + " stored bytes cannot expand to " + std::to_string(link.length));
  }
  if (link.length > kMaxEnvelopeLength) {
    return UnsupportedError(std::string(what) + ": envelope of " + std::to_string(link.length)
                            + " bytes, more than the " + std::to_string(kMaxEnvelopeLength)
                            + " this reader accepts");
  }
  ByteVector stored;
  FERRY_TRY(ReadBlob(source, link.locator.offset, link.locator.size, max_key_size, what, &stored));
  Envelope env;
  FERRY_TRY(Unzip(stored, link.length, what, &env.bytes));
  FERRY_TRY(VerifyEnvelope(env.bytes, type, what));
  env.checksum = LoadLE<uint64_t>(env.bytes.data() + env.bytes.size() - kEnvelopeChecksumSize);
  return env;
}

}  // namespace ferry::rootio
