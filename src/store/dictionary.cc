#include "store/dictionary.h"

#include <zdict.h>

#include <zstd.h>

namespace ferry::store {

struct Dictionary::Digested {
  ZSTD_CDict* cdict = nullptr;
  ZSTD_DDict* ddict = nullptr;
  Digested() = default;
  ~Digested() {
    ZSTD_freeCDict(cdict);
    ZSTD_freeDDict(ddict);
  }
  Digested(const Digested&) = delete;
  Digested& operator=(const Digested&) = delete;
};

namespace {

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

Dictionary::~Dictionary() = default;

Result<std::shared_ptr<const Dictionary>> Dictionary::Make(std::span<const uint8_t> bytes,
                                                           int level) {
  std::shared_ptr<Dictionary> d(new Dictionary());
  d->d_ = std::make_unique<Digested>();
  d->d_->cdict = ZSTD_createCDict(bytes.data(), bytes.size(), level);
  d->d_->ddict = ZSTD_createDDict(bytes.data(), bytes.size());
  if (d->d_->cdict == nullptr || d->d_->ddict == nullptr) {
    return CorruptionError("zstd dictionary of " + std::to_string(bytes.size())
                           + " bytes cannot be loaded");
  }
  return std::shared_ptr<const Dictionary>(std::move(d));
}

Result<size_t> Dictionary::Compress(std::span<const uint8_t> in, ByteVector* out) const {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
  const size_t at = out->size();
  out->resize(at + ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress_usingCDict(cctx.get(), out->data() + at, out->size() - at, in.data(),
                                      in.size(), d_->cdict);
  if (ZSTD_isError(n)) {
    out->resize(at);
    return Error(ErrorCode::kIo, std::string("zstd (dictionary): ") + ZSTD_getErrorName(n), 0);
  }
  out->resize(at + n);
  return n;
}

Status Dictionary::Decompress(std::span<const uint8_t> in, std::span<uint8_t> out) const {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
  size_t n = ZSTD_decompress_usingDDict(dctx.get(), out.data(), out.size(), in.data(), in.size(),
                                        d_->ddict);
  if (ZSTD_isError(n) || n != out.size()) {
    return CorruptionError(std::string("zstd block (dictionary) does not decompress: ")
                           + (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size"));
  }
  return OkStatus();
}

std::vector<uint8_t> TrainDictionary(const std::vector<ByteVector>& samples, size_t max_bytes) {
  std::vector<uint8_t> all;
  std::vector<size_t> sizes;
  for (const ByteVector& s : samples) {
    all.insert(all.end(), s.begin(), s.end());
    sizes.push_back(s.size());
  }
  if (sizes.size() < 8) {
    return {};
  }
  std::vector<uint8_t> dict(max_bytes);
  size_t n = ZDICT_trainFromBuffer(dict.data(), dict.size(), all.data(), sizes.data(),
                                   static_cast<unsigned>(sizes.size()));
  if (ZDICT_isError(n)) {
    return {};
  }
  dict.resize(n);
  return dict;
}

}  // namespace ferry::store
