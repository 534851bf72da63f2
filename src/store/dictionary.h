// Dictionary: a zstd dictionary trained on a store's own E blocks (docs/format/store.md
// section 5). An E block holds only Kc events (a pick decodes one), too little for zstd to learn
// the statistics of 947 columns; a dictionary trained on sample blocks at conversion gives it
// that context up front (entropy tables and common byte strings), about 4% off the store.
//
// Make() digests the dictionary once (ZSTD_CDict for a level, ZSTD_DDict); Compress and
// Decompress are thread-safe (per-thread contexts) and allocate nothing in steady state.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"

namespace ferry::store {

class Dictionary {
 public:
  // level: the zstd level blocks are compressed at (the CDict is made for it).
  static Result<std::shared_ptr<const Dictionary>> Make(std::span<const uint8_t> bytes, int level);
  ~Dictionary();
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;

  // Appends the compressed bytes of in to *out and returns their size.
  Result<size_t> Compress(std::span<const uint8_t> in, ByteVector* out) const;
  // out.size() must be the exact decompressed size.
  Status Decompress(std::span<const uint8_t> in, std::span<uint8_t> out) const;

 private:
  Dictionary() = default;
  struct Digested;
  std::unique_ptr<Digested> d_;
};

// Trains a dictionary of at most max_bytes from samples (zstd's ZDICT trainer). Empty when the
// samples are too few or too uniform to train on: the store is then written without one.
std::vector<uint8_t> TrainDictionary(const std::vector<ByteVector>& samples, size_t max_bytes);

}  // namespace ferry::store
