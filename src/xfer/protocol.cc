#include "xfer/protocol.h"

#include <cstdio>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/hash.h"
#include "xfer/wire.h"

namespace ferry::xfer {
namespace {

bool KnownType(uint8_t t) {
  switch (static_cast<FrameType>(t)) {
    case FrameType::kHello:
    case FrameType::kChallenge:
    case FrameType::kAuth:
    case FrameType::kAuthOk:
    case FrameType::kError:
    case FrameType::kManifest:
    case FrameType::kFileState:
    case FrameType::kStateEnd:
    case FrameType::kFileDone:
    case FrameType::kFileError:
    case FrameType::kNotice:
    case FrameType::kBye:
    case FrameType::kPing:
    case FrameType::kPong:
    case FrameType::kData:
    case FrameType::kAck:
      return true;
  }
  return false;
}

bool FlagsValid(FrameType type, uint16_t flags) {
  switch (type) {
    case FrameType::kManifest:
      return (flags & ~(kManifestLast | kManifestResume | kManifestNamed)) == 0;
    case FrameType::kAck:
      return flags <= static_cast<uint16_t>(AckStatus::kFileFailed);
    case FrameType::kFileState:
      return flags == static_cast<uint16_t>(FileStateKind::kPartial)
             || flags == static_cast<uint16_t>(FileStateKind::kComplete);
    default:
      return flags == 0;
  }
}

std::span<const uint8_t> AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Result<Digest256> Proof(std::string_view label,
                        std::span<const uint8_t> key,
                        const Hello& hello,
                        const Nonce& server_nonce) {
  uint8_t fixed[4];
  fixed[0] = static_cast<uint8_t>(hello.role);
  fixed[1] = 0;
  StoreLE<uint16_t>(fixed + 2, hello.stream_index);
  const std::span<const uint8_t> parts[] = {AsBytes(label), fixed, hello.session,
                                            hello.client_nonce, server_nonce};
  return HmacSha256(key, parts);
}

}  // namespace

std::string_view FrameTypeName(FrameType type) {
  switch (type) {
    case FrameType::kHello:
      return "HELLO";
    case FrameType::kChallenge:
      return "CHALLENGE";
    case FrameType::kAuth:
      return "AUTH";
    case FrameType::kAuthOk:
      return "AUTH_OK";
    case FrameType::kError:
      return "ERROR";
    case FrameType::kManifest:
      return "MANIFEST";
    case FrameType::kFileState:
      return "FILE_STATE";
    case FrameType::kStateEnd:
      return "STATE_END";
    case FrameType::kFileDone:
      return "FILE_DONE";
    case FrameType::kFileError:
      return "FILE_ERROR";
    case FrameType::kNotice:
      return "NOTICE";
    case FrameType::kBye:
      return "BYE";
    case FrameType::kPing:
      return "PING";
    case FrameType::kPong:
      return "PONG";
    case FrameType::kData:
      return "DATA";
    case FrameType::kAck:
      return "ACK";
  }
  return "?";
}

uint32_t MaxPayload(FrameType type) {
  switch (type) {
    case FrameType::kHello:
      return kHelloSize;
    case FrameType::kChallenge:
      return kChallengeSize;
    case FrameType::kAuth:
    case FrameType::kAuthOk:
      return 32;
    case FrameType::kError:
    case FrameType::kFileError:
      return 4 + kMaxMessageBytes;
    case FrameType::kNotice:
      return kMaxMessageBytes;
    case FrameType::kManifest:
    case FrameType::kFileState:
      return kMaxControlPayload;
    case FrameType::kFileDone:
      return 16;
    case FrameType::kPing:
    case FrameType::kPong:
      return 8;
    case FrameType::kData:
      return kMaxBlockSize;
    case FrameType::kStateEnd:
    case FrameType::kBye:
    case FrameType::kAck:
      return 0;
  }
  return 0;
}

uint64_t PayloadHash(std::span<const uint8_t> payload) {
  return hash::Xxh3(payload);
}

void EncodeFrameHeader(const FrameHeader& h, std::span<uint8_t, kFrameHeaderSize> out) {
  uint8_t* p = out.data();
  StoreLE<uint32_t>(p + 0, kFrameMagic);
  p[4] = kProtocolVersion;
  p[5] = static_cast<uint8_t>(h.type);
  StoreLE<uint16_t>(p + 6, h.flags);
  StoreLE<uint32_t>(p + 8, h.length);
  StoreLE<uint32_t>(p + 12, h.file_id);
  StoreLE<uint64_t>(p + 16, h.block);
  StoreLE<uint64_t>(p + 24, h.payload_hash);
  StoreLE<uint32_t>(p + 32, 0);
  StoreLE<uint32_t>(p + 36, crc32c::Value(p, 36));
}

Result<FrameHeader> ParseFrameHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < kFrameHeaderSize) {
    return CorruptionError("frame header truncated: " + std::to_string(bytes.size()) + " bytes");
  }
  const uint8_t* p = bytes.data();
  if (LoadLE<uint32_t>(p) != kFrameMagic) {
    return CorruptionError("bad frame magic (not a ferry transfer peer?)");
  }
  if (p[4] != kProtocolVersion) {
    return Error(ErrorCode::kUnsupported, "protocol version " + std::to_string(p[4])
                                              + " (this ferry speaks "
                                              + std::to_string(kProtocolVersion) + ")");
  }
  if (LoadLE<uint32_t>(p + 36) != crc32c::Value(p, 36)) {
    return CorruptionError("frame header checksum mismatch");
  }
  if (LoadLE<uint32_t>(p + 32) != 0) {
    return CorruptionError("frame header reserved field is not zero");
  }
  if (!KnownType(p[5])) {
    return CorruptionError("unknown frame type " + std::to_string(p[5]));
  }
  FrameHeader h;
  h.type = static_cast<FrameType>(p[5]);
  h.flags = LoadLE<uint16_t>(p + 6);
  h.length = LoadLE<uint32_t>(p + 8);
  h.file_id = LoadLE<uint32_t>(p + 12);
  h.block = LoadLE<uint64_t>(p + 16);
  h.payload_hash = LoadLE<uint64_t>(p + 24);
  if (!FlagsValid(h.type, h.flags)) {
    return CorruptionError(std::string(FrameTypeName(h.type)) + " frame with invalid flags "
                           + std::to_string(h.flags));
  }
  if (h.length > MaxPayload(h.type)) {
    return CorruptionError(std::string(FrameTypeName(h.type)) + " frame payload of "
                           + std::to_string(h.length) + " bytes exceeds the limit of "
                           + std::to_string(MaxPayload(h.type)));
  }
  return h;
}

std::vector<uint8_t> EncodeHello(const Hello& m) {
  std::vector<uint8_t> out;
  WireWriter w(out);
  w.Put<uint8_t>(static_cast<uint8_t>(m.role));
  w.Put<uint8_t>(0);
  w.Put<uint16_t>(m.stream_index);
  w.Put<uint32_t>(0);
  w.Bytes(m.session);
  w.Bytes(m.client_nonce);
  return out;
}

Result<Hello> DecodeHello(std::span<const uint8_t> p) {
  WireReader r(p);
  Hello m;
  auto role = r.Get<uint8_t>();
  r.Get<uint8_t>();
  m.stream_index = r.Get<uint16_t>();
  r.Get<uint32_t>();
  r.Bytes(m.session);
  r.Bytes(m.client_nonce);
  if (!r.done()
      || (role != static_cast<uint8_t>(Role::kControl)
          && role != static_cast<uint8_t>(Role::kData))) {
    return CorruptionError("malformed HELLO");
  }
  m.role = static_cast<Role>(role);
  return m;
}

std::vector<uint8_t> EncodeChallenge(const Challenge& m) {
  std::vector<uint8_t> out;
  WireWriter w(out);
  w.Bytes(m.server_nonce);
  w.Put<uint32_t>(m.server_flags);
  return out;
}

Result<Challenge> DecodeChallenge(std::span<const uint8_t> p) {
  WireReader r(p);
  Challenge m;
  r.Bytes(m.server_nonce);
  m.server_flags = r.Get<uint32_t>();
  if (!r.done()) {
    return CorruptionError("malformed CHALLENGE");
  }
  return m;
}

Result<Digest256> ClientProof(std::span<const uint8_t> key,
                              const Hello& hello,
                              const Nonce& server_nonce) {
  return Proof("ferry-xfer-v1 client proof", key, hello, server_nonce);
}

Result<Digest256> ServerProof(std::span<const uint8_t> key,
                              const Hello& hello,
                              const Nonce& server_nonce) {
  return Proof("ferry-xfer-v1 server proof", key, hello, server_nonce);
}

namespace {
constexpr ErrorCode kWireCodes[] = {
    ErrorCode::kIo,          ErrorCode::kCorruption,
    ErrorCode::kNotFound,    ErrorCode::kInvalidArgument,
    ErrorCode::kUnsupported, ErrorCode::kTimeout,
    ErrorCode::kRemote,      ErrorCode::kShortRead,
    ErrorCode::kNoSpace,     ErrorCode::kCancelled,
    ErrorCode::kPermission,
};
}  // namespace

uint16_t WireErrorCode(ErrorCode code) {
  for (size_t i = 0; i < std::size(kWireCodes); ++i) {
    if (kWireCodes[i] == code) {
      return static_cast<uint16_t>(i + 1);
    }
  }
  return 7;  // remote
}

ErrorCode ErrorCodeFromWire(uint16_t wire) {
  if (wire >= 1 && wire <= std::size(kWireCodes)) {
    return kWireCodes[wire - 1];
  }
  return ErrorCode::kRemote;
}

std::vector<uint8_t> EncodeErrorMessage(ErrorCode code, std::string_view message) {
  std::vector<uint8_t> out;
  WireWriter w(out);
  w.Put<uint16_t>(WireErrorCode(code));
  w.Put<uint16_t>(0);
  std::string_view m = message.substr(0, kMaxMessageBytes);
  out.insert(out.end(), m.begin(), m.end());
  return out;
}

Error DecodeErrorMessage(std::span<const uint8_t> p, std::string_view prefix) {
  WireReader r(p);
  auto code = r.Get<uint16_t>();
  r.Get<uint16_t>();
  if (!r.ok()) {
    return {ErrorCode::kRemote, std::string(prefix) + "malformed error message"};
  }
  std::string text(r.Rest());
  for (char& c : text) {  // the text goes to a terminal: no control characters
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  return {ErrorCodeFromWire(code), std::string(prefix) + text};
}

std::vector<uint8_t> EncodeManifest(const ManifestChunk& m) {
  std::vector<uint8_t> out;
  WireWriter w(out);
  w.Put<uint32_t>(m.block_size);
  w.Put<uint16_t>(m.streams);
  w.Put<uint16_t>(0);
  w.Put<uint64_t>(m.rate_bps);
  w.Put<uint32_t>(m.rtt_us);
  w.Put<uint32_t>(m.total_files);
  w.Put<uint32_t>(m.first_file_id);
  w.Put<uint32_t>(static_cast<uint32_t>(m.entries.size()));
  for (const ManifestEntry& e : m.entries) {
    w.Put<uint64_t>(e.size);
    w.Put<int64_t>(e.mtime_ns);
    w.Put<uint32_t>(e.mode);
    w.String16(e.path);
  }
  if (!m.source_name.empty()) {
    w.String16(m.source_name);
  }
  return out;
}

Result<ManifestChunk> DecodeManifest(std::span<const uint8_t> p) {
  WireReader r(p);
  ManifestChunk m;
  m.block_size = r.Get<uint32_t>();
  m.streams = r.Get<uint16_t>();
  r.Get<uint16_t>();
  m.rate_bps = r.Get<uint64_t>();
  m.rtt_us = r.Get<uint32_t>();
  m.total_files = r.Get<uint32_t>();
  m.first_file_id = r.Get<uint32_t>();
  auto count = r.Get<uint32_t>();
  if (!r.ok()) {
    return CorruptionError("MANIFEST header truncated");
  }
  constexpr size_t kMinEntry = 8 + 8 + 4 + 2;
  if (count > r.remaining() / kMinEntry) {
    return CorruptionError("MANIFEST claims " + std::to_string(count) + " entries in "
                           + std::to_string(r.remaining()) + " bytes");
  }
  if (m.block_size < kMinBlockSize || m.block_size > kMaxBlockSize
      || m.block_size % kMinBlockSize != 0) {
    return CorruptionError("MANIFEST block size " + std::to_string(m.block_size)
                           + " is not a multiple of 4096 in [4 KiB, 256 MiB]");
  }
  if (static_cast<uint64_t>(m.first_file_id) + count > m.total_files) {
    return CorruptionError("MANIFEST entries beyond the announced file count");
  }
  m.entries.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    ManifestEntry e;
    e.size = r.Get<uint64_t>();
    e.mtime_ns = r.Get<int64_t>();
    e.mode = r.Get<uint32_t>();
    e.path = r.String16();
    if (!r.ok()) {
      return CorruptionError("MANIFEST entry " + std::to_string(i) + " truncated");
    }
    if (e.path.size() > kMaxPathBytes) {
      return CorruptionError("MANIFEST path longer than 4096 bytes");
    }
    m.entries.push_back(std::move(e));
  }
  if (!r.done()) {
    m.source_name = r.String16();
    if (!r.ok() || m.source_name.size() > kMaxPathBytes) {
      return CorruptionError("MANIFEST source name truncated or too long");
    }
  }
  if (!r.done()) {
    return CorruptionError("MANIFEST has trailing bytes");
  }
  return m;
}

std::vector<uint8_t> EncodeBlockHashes(std::span<const BlockHash> blocks) {
  std::vector<uint8_t> out;
  out.reserve(4 + blocks.size() * 16);
  WireWriter w(out);
  w.Put<uint32_t>(static_cast<uint32_t>(blocks.size()));
  for (const BlockHash& b : blocks) {
    w.Put<uint64_t>(b.block);
    w.Put<uint64_t>(b.hash);
  }
  return out;
}

Result<std::vector<BlockHash>> DecodeBlockHashes(std::span<const uint8_t> p) {
  WireReader r(p);
  auto count = r.Get<uint32_t>();
  if (!r.ok() || count != r.remaining() / 16 || r.remaining() % 16 != 0) {
    return CorruptionError("malformed FILE_STATE block list");
  }
  std::vector<BlockHash> out(count);
  for (BlockHash& b : out) {
    b.block = r.Get<uint64_t>();
    b.hash = r.Get<uint64_t>();
  }
  return out;
}

std::vector<uint8_t> EncodeFileDone(const FileDone& m) {
  std::vector<uint8_t> out;
  WireWriter w(out);
  w.Put<uint64_t>(m.bytes);
  w.Put<uint64_t>(m.digest);
  return out;
}

Result<FileDone> DecodeFileDone(std::span<const uint8_t> p) {
  WireReader r(p);
  FileDone m;
  m.bytes = r.Get<uint64_t>();
  m.digest = r.Get<uint64_t>();
  if (!r.done()) {
    return CorruptionError("malformed FILE_DONE");
  }
  return m;
}

std::vector<uint8_t> EncodeU64(uint64_t v) {
  std::vector<uint8_t> out(8);
  StoreLE<uint64_t>(out.data(), v);
  return out;
}

Result<uint64_t> DecodeU64(std::span<const uint8_t> p) {
  if (p.size() != 8) {
    return CorruptionError("expected an 8-byte payload");
  }
  return LoadLE<uint64_t>(p.data());
}

uint64_t FileDigest(uint64_t file_size,
                    uint32_t block_size,
                    std::span<const uint64_t> block_hashes) {
  hash::Xxh3Stream s;
  uint8_t head[12];
  StoreLE<uint64_t>(head, file_size);
  StoreLE<uint32_t>(head + 8, block_size);
  s.Update(head, sizeof head);
  uint8_t buf[8 * 256];
  size_t n = 0;
  for (uint64_t h : block_hashes) {
    StoreLE<uint64_t>(buf + 8 * n, h);
    if (++n == 256) {
      s.Update(buf, sizeof buf);
      n = 0;
    }
  }
  s.Update(buf, 8 * n);
  return s.Digest();
}

uint64_t SessionDigest(std::span<const uint64_t> file_digests) {
  return FileDigest(file_digests.size(), 0, file_digests);
}

std::string DigestHex(uint64_t digest) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest));
  return buf;
}

}  // namespace ferry::xfer
