// zstd ("ZS") blocks: each is a complete zstd frame.
#include <memory>
#include <string>

#include <zstd.h>

#include "codec/codecs_internal.h"

namespace ferry::codec::internal {

uint32_t ZstdVersion() {
  return ZSTD_versionNumber();
}
namespace {

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

}  // namespace

Status DecodeZstd(std::span<const uint8_t> in, std::span<uint8_t> out) {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
  size_t n = ZSTD_decompressDCtx(dctx.get(), out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n) != 0) {
    return CorruptionError(std::string("zstd frame is corrupt: ") + ZSTD_getErrorName(n));
  }
  if (n != out.size()) {
    return CorruptionError("zstd block decoded to " + std::to_string(n) + " bytes, header says "
                           + std::to_string(out.size()));
  }
  return OkStatus();
}

Result<size_t> EncodeZstd(int level, std::span<const uint8_t> in, ByteVector* out) {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
  size_t bound = ZSTD_compressBound(in.size());
  size_t old = out->size();
  out->resize(old + bound);
  size_t n = ZSTD_compressCCtx(cctx.get(), out->data() + old, bound, in.data(), in.size(), level);
  if (ZSTD_isError(n) != 0) {
    out->resize(old);
    return Error(ErrorCode::kInvalidArgument,
                 std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  }
  out->resize(old + n);
  return n;
}

}  // namespace ferry::codec::internal
