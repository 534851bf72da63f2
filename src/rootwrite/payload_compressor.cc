#include "rootwrite/payload_compressor.h"

#include <algorithm>
#include <string>

#include <lzma.h>

namespace ferry::rootwrite {
namespace {

// One xz stream per block, encoded with a reused per-thread lzma_stream.
class XzEncoder {
 public:
  XzEncoder() = default;
  XzEncoder(const XzEncoder&) = delete;
  XzEncoder& operator=(const XzEncoder&) = delete;
  ~XzEncoder() { lzma_end(&strm_); }

  // Appends the xz stream of in to out; returns its size, or 0 when it exceeds limit bytes.
  Result<size_t> Encode(int level,
                        std::span<const uint8_t> in,
                        size_t limit,
                        std::vector<uint8_t>* out) {
    // The preset's options with the dictionary capped at the input size: a larger dictionary
    // cannot find more matches, but liblzma would allocate and clear it (and its match finder,
    // hundreds of MiB at level 9) for every basket.
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
    const size_t start = out->size();
    out->resize(start + limit);
    strm_.next_in = in.data();
    strm_.avail_in = in.size();
    strm_.next_out = out->data() + start;
    strm_.avail_out = limit;
    r = lzma_code(&strm_, LZMA_FINISH);
    const size_t produced = limit - strm_.avail_out;
    out->resize(start + produced);
    if (r == LZMA_OK || r == LZMA_BUF_ERROR) {
      out->resize(start);
      return size_t{0};  // ran out of room: not smaller than the limit
    }
    if (r != LZMA_STREAM_END) {
      out->resize(start);
      return Error(ErrorCode::kInvalidArgument,
                   "lzma compression failed (" + std::to_string(static_cast<int>(r)) + ")");
    }
    return produced;
  }

 private:
  lzma_stream strm_ = LZMA_STREAM_INIT;
};

void Store24(uint8_t* p, size_t v) {
  p[0] = static_cast<uint8_t>(v & 0xFF);
  p[1] = static_cast<uint8_t>((v >> 8) & 0xFF);
  p[2] = static_cast<uint8_t>((v >> 16) & 0xFF);
}

Result<bool> CompressLzma(int level, std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  thread_local XzEncoder encoder;
  const size_t start = out->size();
  size_t pos = 0;
  while (pos < in.size()) {
    const size_t n = std::min(codec::kMaxBlockSize, in.size() - pos);
    const size_t header_at = out->size();
    const size_t used = header_at - start + codec::kBlockHeaderSize;
    if (used >= in.size()) {
      out->resize(start);
      return false;
    }
    out->resize(header_at + codec::kBlockHeaderSize);
    // The whole chain must stay smaller than the input, and a block body must fit 24 bits.
    const size_t limit = std::min(in.size() - used, codec::kMaxBlockSize);
    auto body = encoder.Encode(level, in.subspan(pos, n), limit, out);
    if (!body.has_value()) {
      out->resize(start);
      return std::move(body).error();
    }
    if (*body == 0) {
      out->resize(start);
      return false;
    }
    uint8_t* h = out->data() + header_at;
    h[0] = 'X';
    h[1] = 'Z';
    h[2] = 0;
    Store24(h + 3, *body);
    Store24(h + 6, n);
    pos += n;
  }
  if (out->size() - start >= in.size()) {
    out->resize(start);
    return false;
  }
  return true;
}

}  // namespace

Result<size_t> CompressBlockBody(const codec::Setting& setting,
                                 std::span<const uint8_t> in,
                                 std::vector<uint8_t>* out) {
  if (setting.algorithm == codec::Algorithm::kLzma) {
    thread_local XzEncoder encoder;
    return encoder.Encode(setting.level, in, in.size() + in.size() / 2 + 4096, out);
  }
  return codec::CompressBlock(setting, in, out);
}

Result<bool> CompressRecordPayload(const codec::Setting& setting,
                                   std::span<const uint8_t> in,
                                   std::vector<uint8_t>* out) {
  if (setting.algorithm == codec::Algorithm::kLzma && !in.empty()) {
    return CompressLzma(setting.level, in, out);
  }
  return codec::CompressPayload(setting, in, out);
}

}  // namespace ferry::rootwrite
