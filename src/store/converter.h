// Convert: ROOT files (flat TTrees such as NanoAOD Events) -> an event store directory.
//
// Pass 1 reads run, luminosityBlock and event of every input entry, assigns the slots
// (runs, lumis and event numbers sorted) and fixes the grid extents; pass 2 streams the
// inputs in entry order, cluster by cluster, into one ShardWriter per run. Then the manifest
// is written (last, atomically by rename), so a directory without a MANIFEST is not a store.
// Rules (docs/format/store.md section 8): a tree without luminosityBlock is stored with lumi
// 0 (flagged); without run or event it is rejected; duplicate run:lumi:event is rejected.
// Strings and multi-leaf branches are skipped and listed in the report.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "codec/compression.h"
#include "store/format.h"

namespace ferry::store {

struct ConvertOptions {
  std::vector<std::string> inputs;
  std::string tree = "Events";
  std::string out_dir;
  uint32_t block_size = 32 * 1024;  // target uncompressed bytes of one C block
  codec::Setting codec{codec::Algorithm::kZstd, 3};
  uint8_t log2_ks = 13;  // events per S block = 2^log2_ks
  // Called with (entries done, entries total) during pass 2; may be empty.
  std::function<void(uint64_t, uint64_t)> progress;
};

struct ConvertReport {
  Manifest manifest;
  std::vector<std::string> skipped;  // "name: reason"
  uint64_t input_bytes = 0;
  uint64_t store_bytes = 0;
  uint64_t raw_payload_bytes = 0;
  uint64_t stored_payload_bytes = 0;
  uint64_t c_blocks = 0;
  double seconds = 0;
};

Result<ConvertReport> Convert(const ConvertOptions& options);

}  // namespace ferry::store
