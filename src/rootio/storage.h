// Storage survey of a tree: per branch, stored and uncompressed bytes and the codecs its
// baskets actually use (read from each basket's first block tag, never from fCompress).
// Costs one vector read of the basket key headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "codec/compression.h"
#include "rootio/tree.h"

namespace ferry::rootio {

struct BranchStorage {
  uint64_t zbytes = 0;  // bytes on disk: basket records (embedded baskets: their data size)
  uint64_t bytes = 0;   // uncompressed: key + payload per basket (embedded: data size)
  uint32_t disk_baskets = 0;
  uint32_t embedded_baskets = 0;
  uint32_t algorithms = 0;  // bit (1 << Algorithm) for every algorithm seen; kNone = raw

  // The compression algorithm of the branch's baskets: "zlib", "lzma", "zstd", "lz4", "cs";
  // "mixed" when baskets use different algorithms; "none" when every basket is stored raw
  // (or the branch has none). Baskets that ROOT stored raw because compression did not shrink
  // them (and embedded baskets) do not make a branch mixed.
  std::string CodecName() const;
};

Result<std::vector<BranchStorage>> SurveyStorage(const Tree& tree);

}  // namespace ferry::rootio
