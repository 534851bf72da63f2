#include "codec/compression.h"

#include <algorithm>
#include <cstring>

#include "base/strings.h"
#include "codec/codecs_internal.h"

namespace ferry::codec {
namespace {

struct Tag {
  char a, b;
  Algorithm algorithm;
  uint8_t method;
};

constexpr Tag kTags[] = {
    {'Z', 'L', Algorithm::kZlib, 8},    {'X', 'Z', Algorithm::kLzma, 0},
    {'L', '4', Algorithm::kLz4, 1},     {'Z', 'S', Algorithm::kZstd, 1},
    {'C', 'S', Algorithm::kOldRoot, 8},
};

uint32_t Load24(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8)
         | (static_cast<uint32_t>(p[2]) << 16);
}

void Store24(uint8_t* p, size_t v) {
  p[0] = static_cast<uint8_t>(v & 0xFF);
  p[1] = static_cast<uint8_t>((v >> 8) & 0xFF);
  p[2] = static_cast<uint8_t>((v >> 16) & 0xFF);
}

int DefaultLevel(Algorithm a) {
  switch (a) {
    case Algorithm::kZlib:
    case Algorithm::kOldRoot:
      return 1;
    case Algorithm::kLzma:
      return 9;
    case Algorithm::kZstd:
      return 5;
    case Algorithm::kLz4:
      return 4;
    case Algorithm::kNone:
      return 0;
  }
  return 1;
}

}  // namespace

std::string_view AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kNone:
      return "none";
    case Algorithm::kZlib:
      return "zlib";
    case Algorithm::kLzma:
      return "lzma";
    case Algorithm::kOldRoot:
      return "cs";
    case Algorithm::kLz4:
      return "lz4";
    case Algorithm::kZstd:
      return "zstd";
  }
  return "unknown";
}

Result<Setting> Setting::Parse(std::string_view text) {
  auto parts = Split(text, ':');
  if (parts.size() > 2) {
    return InvalidArgumentError("bad codec '" + std::string(text) + "' (expected NAME[:LEVEL])");
  }
  Setting s;
  std::string_view name = parts[0];
  if (name == "zlib") {
    s.algorithm = Algorithm::kZlib;
  } else if (name == "lzma" || name == "xz") {
    s.algorithm = Algorithm::kLzma;
  } else if (name == "zstd") {
    s.algorithm = Algorithm::kZstd;
  } else if (name == "lz4") {
    s.algorithm = Algorithm::kLz4;
  } else if (name == "none") {
    s.algorithm = Algorithm::kNone;
  } else {
    return InvalidArgumentError("unknown codec '" + std::string(name)
                                + "' (zlib, lzma, zstd, lz4, none)");
  }
  s.level = DefaultLevel(s.algorithm);
  if (parts.size() == 2) {
    int64_t level = FERRY_TRY(ParseInt(parts[1]));
    int max = s.algorithm == Algorithm::kZstd   ? 19
              : s.algorithm == Algorithm::kLz4  ? 12
              : s.algorithm == Algorithm::kNone ? 0
                                                : 9;
    if (level < (s.algorithm == Algorithm::kNone ? 0 : 1) || level > max) {
      return InvalidArgumentError("level " + std::to_string(level) + " out of range for "
                                  + std::string(name) + " (1-" + std::to_string(max) + ")");
    }
    s.level = static_cast<int>(level);
  }
  return s;
}

int Setting::RootSetting() const {
  if (algorithm == Algorithm::kNone) {
    return 0;
  }
  return 100 * static_cast<int>(algorithm) + level;
}

std::string Setting::ToString() const {
  if (algorithm == Algorithm::kNone) {
    return "none";
  }
  return std::string(AlgorithmName(algorithm)) + ":" + std::to_string(level);
}

Result<BlockHeader> ParseBlockHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < kBlockHeaderSize) {
    return CorruptionError("compression block header truncated (" + std::to_string(bytes.size())
                           + " of 9 bytes)");
  }
  for (const Tag& t : kTags) {
    if (bytes[0] == static_cast<uint8_t>(t.a) && bytes[1] == static_cast<uint8_t>(t.b)) {
      return BlockHeader{t.algorithm, bytes[2], Load24(bytes.data() + 3), Load24(bytes.data() + 6)};
    }
  }
  char tag[8];
  std::snprintf(tag, sizeof tag, "%02x%02x", bytes[0], bytes[1]);
  return CorruptionError(std::string("unknown compression block tag 0x") + tag);
}

Algorithm DetectAlgorithm(std::span<const uint8_t> payload) {
  auto h = ParseBlockHeader(payload);
  return h.has_value() ? h->algorithm : Algorithm::kNone;
}

Status DecompressBlock(Algorithm algorithm, std::span<const uint8_t> in, std::span<uint8_t> out) {
  switch (algorithm) {
    case Algorithm::kZlib:
      return internal::InflateZlib(in, out);
    case Algorithm::kOldRoot:
      return internal::InflateRaw(in, out);
    case Algorithm::kLzma:
      return internal::DecodeLzma(in, out);
    case Algorithm::kZstd:
      return internal::DecodeZstd(in, out);
    case Algorithm::kLz4:
      return internal::DecodeLz4Root(in, out);
    case Algorithm::kNone:
      if (in.size() != out.size()) {
        return CorruptionError("stored block size mismatch");
      }
      if (!in.empty()) {
        std::memcpy(out.data(), in.data(), in.size());
      }
      return OkStatus();
  }
  return UnsupportedError("unknown algorithm");
}

Status DecompressPayload(std::span<const uint8_t> in, std::span<uint8_t> out) {
  size_t in_pos = 0;
  size_t out_pos = 0;
  int block = 0;
  while (out_pos < out.size()) {
    auto hr = ParseBlockHeader(in.subspan(in_pos));
    if (!hr.has_value()) {
      return std::move(hr).error().AddContext("block " + std::to_string(block) + " at byte "
                                              + std::to_string(in_pos));
    }
    const BlockHeader& h = *hr;
    size_t body_start = in_pos + kBlockHeaderSize;
    if (h.compressed_size > in.size() - body_start) {
      return CorruptionError("block " + std::to_string(block) + " is truncated: needs "
                             + std::to_string(h.compressed_size) + " bytes, "
                             + std::to_string(in.size() - body_start) + " remain");
    }
    if (h.uncompressed_size > out.size() - out_pos) {
      return CorruptionError(
          "block " + std::to_string(block) + " expands to " + std::to_string(h.uncompressed_size)
          + " bytes, more than the record's remaining " + std::to_string(out.size() - out_pos));
    }
    if (h.uncompressed_size == 0) {
      return CorruptionError("block " + std::to_string(block) + " has zero uncompressed size");
    }
    Status st = DecompressBlock(h.algorithm, in.subspan(body_start, h.compressed_size),
                                out.subspan(out_pos, h.uncompressed_size));
    if (!st.has_value()) {
      return std::move(st).error().AddContext("block " + std::to_string(block) + " ("
                                              + std::string(AlgorithmName(h.algorithm)) + ")");
    }
    in_pos = body_start + h.compressed_size;
    out_pos += h.uncompressed_size;
    ++block;
  }
  return OkStatus();
}

uint32_t LibraryVersion(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kZstd:
      return internal::ZstdVersion();
    case Algorithm::kLz4:
      return internal::Lz4Version();
    default:
      return 0;
  }
}

Result<size_t> CompressBlock(const Setting& setting, std::span<const uint8_t> in, ByteVector* out) {
  switch (setting.algorithm) {
    case Algorithm::kZlib:
      return internal::DeflateZlib(setting.level, in, out);
    case Algorithm::kOldRoot:
      return internal::DeflateRaw(setting.level, in, out);
    case Algorithm::kLzma:
      return internal::EncodeLzma(setting.level, in, out);
    case Algorithm::kZstd:
      return internal::EncodeZstd(setting.level, in, out);
    case Algorithm::kLz4:
      return internal::EncodeLz4Root(setting.level, in, out);
    case Algorithm::kNone:
      out->insert(out->end(), in.data(), in.data() + in.size());
      return in.size();
  }
  return UnsupportedError("unknown algorithm");
}

Result<bool> CompressPayload(const Setting& setting, std::span<const uint8_t> in, ByteVector* out) {
  if (setting.algorithm == Algorithm::kNone || in.empty()) {
    return false;
  }
  const size_t start = out->size();
  size_t pos = 0;
  while (pos < in.size()) {
    size_t n = std::min(kMaxBlockSize, in.size() - pos);
    size_t header_at = out->size();
    out->resize(header_at + kBlockHeaderSize);
    auto body = CompressBlock(setting, in.subspan(pos, n), out);
    if (!body.has_value()) {
      out->resize(start);
      return std::move(body).error();
    }
    if (*body > kMaxBlockSize || out->size() - start >= in.size()) {
      out->resize(start);  // not smaller: the caller stores the payload raw
      return false;
    }
    const Tag* tag = nullptr;
    for (const Tag& t : kTags) {
      if (t.algorithm == setting.algorithm) {
        tag = &t;
      }
    }
    uint8_t* h = out->data() + header_at;
    h[0] = static_cast<uint8_t>(tag->a);
    h[1] = static_cast<uint8_t>(tag->b);
    h[2] = tag->method;
    Store24(h + 3, *body);
    Store24(h + 6, n);
    pos += n;
  }
  return true;
}

}  // namespace ferry::codec
