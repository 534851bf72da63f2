// The ferry transfer protocol: frame header and message payloads (docs/format/transfer.md).
//
// Every message is a 40-byte little-endian frame header followed by `length` payload bytes:
//
//   off size field
//     0    4 magic          "FRYX" (0x58595246 as a little-endian u32)
//     4    1 version        kProtocolVersion (1)
//     5    1 type           FrameType
//     6    2 flags          type-specific (ACK status, MANIFEST last/resume, FILE_STATE state)
//     8    4 length         payload bytes that follow the header
//    12    4 file_id        index of the file in the session manifest (0 when unused)
//    16    8 block          block index for DATA/ACK (0 when unused)
//    24    8 payload_hash   XXH3-64 of the payload (of the empty string when length == 0)
//    32    4 reserved       0
//    36    4 header_crc     CRC32C of bytes 0..35
//
// ParseFrameHeader() is the only parser of untrusted header bytes (it has a libFuzzer target,
// fuzz/xfer_frame_fuzz.cc); the payload decoders below read through a bounds-checked WireReader.
// All functions are pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "xfer/sha256.h"

namespace ferry::xfer {

inline constexpr uint32_t kFrameMagic = 0x58595246;  // bytes 'F' 'R' 'Y' 'X'
inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr size_t kFrameHeaderSize = 40;
inline constexpr uint32_t kMaxControlPayload = 16u << 20;
inline constexpr uint32_t kMinBlockSize = 4096;
inline constexpr uint32_t kMaxBlockSize = 256u << 20;
inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxMessageBytes = 4096;

enum class FrameType : uint8_t {
  kHello = 0x01,      // client -> receiver: role, session, stream index, client nonce
  kChallenge = 0x02,  // receiver -> client: server nonce
  kAuth = 0x03,       // client -> receiver: HMAC proof
  kAuthOk = 0x04,     // receiver -> client: HMAC proof of the receiver
  kError = 0x05,      // either way: fatal for the connection (or the file, when file_id is set)
  kManifest = 0x10,   // sender -> receiver (control): a chunk of the file list
  kFileState = 0x11,  // receiver -> sender (control): what the receiver already has of a file
  kStateEnd = 0x12,   // receiver -> sender (control): manifest accepted, data may flow
  kFileDone = 0x13,   // receiver -> sender (control): file verified, synced, renamed; digest
  kFileError = 0x14,  // receiver -> sender (control): the file failed at the receiver
  kNotice = 0x15,     // receiver -> sender (control): a warning for the user
  kBye = 0x16,        // sender -> receiver and back (control): end of the session
  kPing = 0x17,       // control keep-alive / RTT probe
  kPong = 0x18,
  kData = 0x20,  // sender -> receiver (data stream): one block
  kAck = 0x21,   // receiver -> sender (data stream): block verified and written, or not
};

std::string_view FrameTypeName(FrameType type);

// Flags of a MANIFEST frame.
inline constexpr uint16_t kManifestLast = 1;
inline constexpr uint16_t kManifestResume = 2;
// The one file of the transfer was given a new name, its path, as cp names its target: if that
// path is an existing directory on the receiver, the file goes inside it as source_name.
inline constexpr uint16_t kManifestNamed = 4;
// Flags of an ACK frame (a status, not a bit set).
enum class AckStatus : uint16_t { kOk = 0, kBadChecksum = 1, kFileFailed = 2 };
// Flags of a FILE_STATE frame (a state, not a bit set).
enum class FileStateKind : uint16_t { kPartial = 1, kComplete = 2 };

struct FrameHeader {
  FrameType type = FrameType::kPing;
  uint16_t flags = 0;
  uint32_t length = 0;
  uint32_t file_id = 0;
  uint64_t block = 0;
  uint64_t payload_hash = 0;
};

// Largest payload a frame of this type may carry (DATA: kMaxBlockSize; fixed-size messages:
// their size).
uint32_t MaxPayload(FrameType type);
// XXH3-64 of a payload, as stored in payload_hash.
uint64_t PayloadHash(std::span<const uint8_t> payload);

void EncodeFrameHeader(const FrameHeader& h, std::span<uint8_t, kFrameHeaderSize> out);
// Validates magic, version, type, reserved bytes, flags, length bound and header CRC.
// kCorruption with a precise message otherwise. Never reads past `bytes`.
Result<FrameHeader> ParseFrameHeader(std::span<const uint8_t> bytes);

// ----- payloads

enum class Role : uint8_t { kControl = 1, kData = 2 };
using SessionId = std::array<uint8_t, 16>;
using Nonce = std::array<uint8_t, 32>;

struct Hello {
  Role role = Role::kControl;
  uint16_t stream_index = 0;
  SessionId session{};
  Nonce client_nonce{};
};
inline constexpr uint32_t kHelloSize = 56;
std::vector<uint8_t> EncodeHello(const Hello& m);
Result<Hello> DecodeHello(std::span<const uint8_t> p);

struct Challenge {
  Nonce server_nonce{};
  uint32_t server_flags = 0;  // bit 0: a token is required
};
inline constexpr uint32_t kChallengeSize = 36;
std::vector<uint8_t> EncodeChallenge(const Challenge& m);
Result<Challenge> DecodeChallenge(std::span<const uint8_t> p);

// The MACs of the handshake. Both bind the role, session and stream, so a proof cannot be
// replayed on another connection (the nonces are fresh per connection).
Result<Digest256> ClientProof(std::span<const uint8_t> key,
                              const Hello& hello,
                              const Nonce& server_nonce);
Result<Digest256> ServerProof(std::span<const uint8_t> key,
                              const Hello& hello,
                              const Nonce& server_nonce);

// Wire error codes (ERROR, FILE_ERROR); translated explicitly so ErrorCode can change freely.
uint16_t WireErrorCode(ErrorCode code);
ErrorCode ErrorCodeFromWire(uint16_t wire);
std::vector<uint8_t> EncodeErrorMessage(ErrorCode code, std::string_view message);
// Never fails: a malformed payload becomes a kRemote error describing it.
Error DecodeErrorMessage(std::span<const uint8_t> p, std::string_view prefix);

struct ManifestEntry {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
  std::string path;  // relative, '/'-separated (validated by the receiver)
};

struct ManifestChunk {
  uint32_t block_size = 0;
  uint16_t streams = 0;
  uint64_t rate_bps = 0;
  uint32_t rtt_us = 0;
  uint32_t total_files = 0;
  uint32_t first_file_id = 0;
  std::vector<ManifestEntry> entries;
  std::string source_name;  // with kManifestNamed: the source's base name (trailing, optional)
};
std::vector<uint8_t> EncodeManifest(const ManifestChunk& m);
Result<ManifestChunk> DecodeManifest(std::span<const uint8_t> p);

struct BlockHash {
  uint64_t block = 0;
  uint64_t hash = 0;
};
std::vector<uint8_t> EncodeBlockHashes(std::span<const BlockHash> blocks);
Result<std::vector<BlockHash>> DecodeBlockHashes(std::span<const uint8_t> p);

struct FileDone {
  uint64_t bytes = 0;
  uint64_t digest = 0;
};
std::vector<uint8_t> EncodeFileDone(const FileDone& m);
Result<FileDone> DecodeFileDone(std::span<const uint8_t> p);

std::vector<uint8_t> EncodeU64(uint64_t v);
Result<uint64_t> DecodeU64(std::span<const uint8_t> p);

// Number of blocks of a file (without overflow for any size: sizes come from the peer and from
// journals) and the length of one block.
inline uint64_t BlockCount(uint64_t file_size, uint32_t block_size) {
  return file_size / block_size + (file_size % block_size != 0 ? 1 : 0);
}
inline uint32_t BlockLength(uint64_t file_size, uint32_t block_size, uint64_t block) {
  uint64_t start = block * block_size;
  uint64_t left = file_size > start ? file_size - start : 0;
  return static_cast<uint32_t>(left < block_size ? left : block_size);
}

// Whole-file digest ("xxh3-blocks"): XXH3-64 over u64 file_size, u32 block_size and the
// XXH3-64 of every block in order, all little-endian. Both ends compute it from the block
// hashes they verified, so blocks may arrive in any order.
uint64_t FileDigest(uint64_t file_size,
                    uint32_t block_size,
                    std::span<const uint64_t> block_hashes);
// Digest of a whole session: XXH3-64 over the file digests in manifest order.
uint64_t SessionDigest(std::span<const uint64_t> file_digests);
std::string DigestHex(uint64_t digest);

}  // namespace ferry::xfer
