// LZ4 ("L4") blocks in ROOT's framing: 8 bytes of big-endian XXH64 (seed 0) of the LZ4 data,
// then one raw LZ4 block (not an LZ4 frame). The checksum is verified before decoding.
#include <lz4hc.h>

#include <string>

#include <lz4.h>

#include "base/endian.h"
#include "base/hash.h"
#include "codec/codecs_internal.h"

namespace ferry::codec::internal {

uint32_t Lz4Version() {
  return static_cast<uint32_t>(LZ4_versionNumber());
}

Status DecodeLz4Root(std::span<const uint8_t> in, std::span<uint8_t> out) {
  if (in.size() < 8) {
    return CorruptionError("lz4 block shorter than its 8-byte checksum");
  }
  auto want = LoadBE<uint64_t>(in.data());
  std::span<const uint8_t> body = in.subspan(8);
  uint64_t got = hash::Xxh64(body.data(), body.size(), 0);
  if (got != want) {
    return CorruptionError("lz4 block checksum mismatch (stored xxhash64 " + std::to_string(want)
                           + ", computed " + std::to_string(got) + ")");
  }
  int n = LZ4_decompress_safe(reinterpret_cast<const char*>(body.data()),
                              reinterpret_cast<char*>(out.data()), static_cast<int>(body.size()),
                              static_cast<int>(out.size()));
  if (n < 0) {
    return CorruptionError("lz4 block is corrupt");
  }
  if (static_cast<size_t>(n) != out.size()) {
    return CorruptionError("lz4 block decoded to " + std::to_string(n) + " bytes, header says "
                           + std::to_string(out.size()));
  }
  return OkStatus();
}

Result<size_t> EncodeLz4Root(int level, std::span<const uint8_t> in, ByteVector* out) {
  int bound = LZ4_compressBound(static_cast<int>(in.size()));
  size_t old = out->size();
  out->resize(old + 8 + static_cast<size_t>(bound));
  char* dst = reinterpret_cast<char*>(out->data() + old + 8);
  const char* src = reinterpret_cast<const char*>(in.data());
  int n;
  // As ROOT does: the high-compression encoder from level 4 up.
  if (level >= 4) {
    n = LZ4_compress_HC(src, dst, static_cast<int>(in.size()), bound, level);
  } else {
    n = LZ4_compress_default(src, dst, static_cast<int>(in.size()), bound);
  }
  if (n <= 0) {
    out->resize(old);
    return Error(ErrorCode::kInvalidArgument, "lz4 compression failed");
  }
  uint64_t sum = hash::Xxh64(dst, static_cast<size_t>(n), 0);
  StoreBE<uint64_t>(out->data() + old, sum);
  out->resize(old + 8 + static_cast<size_t>(n));
  return 8 + static_cast<size_t>(n);
}

}  // namespace ferry::codec::internal
