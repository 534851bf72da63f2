// RNTuple envelopes: the header, footer and page-list metadata blocks.
//
//   0      u64: bits 0-15 envelope type (1 header, 2 footer, 3 page list),
//               bits 16-63 the envelope's uncompressed length (preamble and checksum included)
//   8      payload
//   len-8  u64 XXH3-64 of bytes [0, len-8)
//
// Format: docs/format/rntuple.md ("Envelopes").
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "base/byte_vector.h"
#include "base/result.h"
#include "io/byte_source.h"
#include "rootio/rntuple_frame.h"

namespace ferry::rootio {

enum class EnvelopeType : uint16_t { kHeader = 1, kFooter = 2, kPageList = 3 };

constexpr size_t kEnvelopePreamble = 8;
constexpr int kEnvelopeTypeBits = 16;  // the rest of the preamble word is the length
constexpr size_t kEnvelopeChecksumSize = 8;
// Metadata of real RNTuples takes kilobytes to megabytes; a longer envelope is refused rather
// than decompressed (a few kilobytes of compressed blocks can claim gigabytes).
constexpr uint64_t kMaxEnvelopeLength = uint64_t{1} << 30;

struct Envelope {
  ByteVector bytes;  // the whole uncompressed envelope
  uint64_t checksum = 0;

  // The bytes between the preamble and the checksum.
  std::span<const uint8_t> payload() const {
    return std::span<const uint8_t>(bytes).subspan(
        kEnvelopePreamble, bytes.size() - kEnvelopePreamble - kEnvelopeChecksumSize);
  }
};

// Checks an uncompressed envelope: length, type and checksum. `what` names it in errors
// ("RNTuple 'Events' footer envelope").
Status VerifyEnvelope(std::span<const uint8_t> bytes, EnvelopeType type, std::string_view what);

// Reads, decompresses and verifies the envelope a link names.
Result<Envelope> ReadEnvelope(io::ByteSource& source,
                              const EnvelopeLink& link,
                              EnvelopeType type,
                              uint64_t max_key_size,
                              std::string_view what);

}  // namespace ferry::rootio
