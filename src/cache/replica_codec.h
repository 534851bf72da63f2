// Choosing a replica's codec by measurement on this machine (docs/format/replica.md).
//
// The candidates (raw, LZ4, zstd at rising levels) compress a sample of the baskets the
// replica will hold, and each one's decoding is timed (best of two). The choice is the one that
// decodes fastest while the sample stays within the disk budget — `budget_percent` of the
// sample's size in its original encoding (auto: 150 for LZMA originals, whose small size is
// bought with slow decoding, 100 for the others). Among candidates that decode within 10% of
// the fastest, the one that compresses fastest wins, so the build costs less. When nothing fits
// the budget, the smallest wins. zstd levels are tried in rising order only until one fits:
// higher levels decode no faster.
//
// Thread-safety: pure function (uses the codec's per-thread contexts).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "cache/replica_manifest.h"
#include "codec/compression.h"

namespace ferry::cache {

struct CodecChoice {
  codec::Setting setting;
  std::vector<CodecRate> rates;  // every candidate measured, the original encoding first
  uint64_t sample_bytes = 0;     // decompressed bytes of the sample
  uint64_t budget_bytes = 0;     // the sample may take this much in the chosen encoding
  std::string why;
};

// `records`: basket records (key + stored payload) in their original encoding. `configured`:
// "auto" or a codec (then it is measured and used whatever the budget).
Result<CodecChoice> ChooseReplicaCodec(std::span<const std::vector<uint8_t>> records,
                                       const std::string& configured,
                                       uint32_t budget_percent);

}  // namespace ferry::cache
