// Reads every readable leaf of every tree of a file end to end (every basket decompressed and
// decoded). Used by the corrupt-input tests, the writer's tests and the fuzz target
// (fuzz/rootio_fuzz.cc); no command runs it.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "rootio/root_file.h"

namespace ferry::rootio {

struct VerifyStats {
  uint64_t trees = 0;
  uint64_t leaves_read = 0;
  uint64_t leaves_unsupported = 0;
  uint64_t entries = 0;  // summed over trees
  uint64_t values = 0;   // values decoded, summed over leaves
};

// max_values_per_leaf bounds the work per leaf (0 = unbounded), for fuzzing.
Result<VerifyStats> ReadAllTrees(const RootFile& file, uint64_t max_entries_per_leaf = 0);

}  // namespace ferry::rootio
