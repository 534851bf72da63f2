// LZMA ("XZ") blocks: each is a complete .xz stream.
//
// Encoding uses liblzma's streaming encoder (LZMA2 filter, CRC32 check, no sizes in the xz
// block header): the exact layout ROOT writes. Some readers depend on it — jsroot skips a
// fixed 29 bytes (stream header, 12-byte block header, LZMA2 chunk header) to reach the LZMA
// properties, which fails on the longer block header of liblzma's single-call encoder. The
// preset's dictionary is capped at the input size: a larger one finds no more matches, but
// liblzma would allocate and clear it (and its match finder, hundreds of MiB at level 9) for
// every basket.
#include <algorithm>
#include <cstdint>
#include <string>

#include <lzma.h>

#include "codec/codecs_internal.h"

namespace ferry::codec::internal {
namespace {

// A per-thread lzma_stream, reused across blocks.
class XzEncoder {
 public:
  XzEncoder() = default;
  XzEncoder(const XzEncoder&) = delete;
  XzEncoder& operator=(const XzEncoder&) = delete;
  ~XzEncoder() { lzma_end(&strm_); }

  Result<size_t> Encode(int level, std::span<const uint8_t> in, ByteVector* out) {
    lzma_options_lzma opt{};
    if (lzma_lzma_preset(&opt, static_cast<uint32_t>(std::clamp(level, 0, 9))) != 0) {
      return InvalidArgumentError("bad lzma level " + std::to_string(level));
    }
    uint32_t dict = LZMA_DICT_SIZE_MIN;
    while (dict < in.size() && dict < opt.dict_size) {
      dict *= 2;
    }
    opt.dict_size = std::min(dict, opt.dict_size);
    lzma_filter filters[] = {{LZMA_FILTER_LZMA2, &opt}, {LZMA_VLI_UNKNOWN, nullptr}};
    lzma_ret r = lzma_stream_encoder(&strm_, filters, LZMA_CHECK_CRC32);
    if (r != LZMA_OK) {
      return InvalidArgumentError("lzma encoder setup failed ("
                                  + std::to_string(static_cast<int>(r)) + ")");
    }
    const size_t bound = lzma_stream_buffer_bound(in.size());
    const size_t start = out->size();
    out->resize(start + bound);
    strm_.next_in = in.data();
    strm_.avail_in = in.size();
    strm_.next_out = out->data() + start;
    strm_.avail_out = bound;
    r = lzma_code(&strm_, LZMA_FINISH);
    const size_t produced = bound - strm_.avail_out;
    if (r != LZMA_STREAM_END) {
      out->resize(start);
      return InvalidArgumentError("lzma compression failed (" + std::to_string(static_cast<int>(r))
                                  + ")");
    }
    out->resize(start + produced);
    return produced;
  }

 private:
  lzma_stream strm_ = LZMA_STREAM_INIT;
};

}  // namespace

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

Result<size_t> EncodeLzma(int level, std::span<const uint8_t> in, ByteVector* out) {
  thread_local XzEncoder encoder;
  return encoder.Encode(level, in, out);
}

}  // namespace ferry::codec::internal
