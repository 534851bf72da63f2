// LZMA ("XZ") blocks: each is a complete .xz stream.
#include <cstdint>
#include <string>

#include <lzma.h>

#include "codec/codecs_internal.h"

namespace ferry::codec::internal {

Status DecodeLzma(std::span<const uint8_t> in, std::span<uint8_t> out) {
  uint64_t memlimit = UINT64_MAX;
  size_t in_pos = 0;
  size_t out_pos = 0;
  lzma_ret r = lzma_stream_buffer_decode(&memlimit, 0, nullptr, in.data(), &in_pos, in.size(),
                                         out.data(), &out_pos, out.size());
  if (r != LZMA_OK) {
    return CorruptionError("xz stream is corrupt (liblzma error "
                           + std::to_string(static_cast<int>(r)) + ")");
  }
  if (out_pos != out.size()) {
    return CorruptionError("xz block decoded to " + std::to_string(out_pos) + " bytes, header says "
                           + std::to_string(out.size()));
  }
  return OkStatus();
}

Result<size_t> EncodeLzma(int level, std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  if (level < 0) {
    level = 0;
  }
  if (level > 9) {
    level = 9;
  }
  size_t bound = lzma_stream_buffer_bound(in.size());
  size_t old = out->size();
  out->resize(old + bound);
  size_t out_pos = 0;
  // ROOT writes xz streams with a CRC32 integrity check.
  lzma_ret r = lzma_easy_buffer_encode(static_cast<uint32_t>(level), LZMA_CHECK_CRC32, nullptr,
                                       in.data(), in.size(), out->data() + old, &out_pos, bound);
  out->resize(old + out_pos);
  if (r != LZMA_OK) {
    return Error(ErrorCode::kInvalidArgument,
                 "lzma compression failed (" + std::to_string(static_cast<int>(r)) + ")");
  }
  return out_pos;
}

}  // namespace ferry::codec::internal
