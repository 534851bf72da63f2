// A sample RNTuple of every field shape RntupleWriter writes (test support, not part of
// ferry_rootwrite): a bool and every integer width and float type as scalars, two collections
// of several member types (signed 64-bit extremes, bools, bytes), empty entries, and a
// collection that is empty in every entry. Values are functions of the entry number, so a
// reader's values can be checked without the writer; Batch builds them in the column layout
// both writers take.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "rootio/column.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/rntuple_writer.h"
#include "rootwrite/tree_writer.h"

namespace ferry::rootwrite::sample {

// The branches, counters before the branches they count.
std::vector<BranchSpec> RntupleBranches();

// Columns of entries [first, first + n), one per branch of RntupleBranches().
std::vector<rootio::Column> RntupleBatch(int64_t first, int64_t n);

// Writes `entries` entries of the sample as the RNTuple options.name, in batches of `batch`.
Status WriteRntuple(const std::string& path,
                    const FileOptions& file_options,
                    const RntupleOptions& options,
                    int64_t entries,
                    int64_t batch = 700);

}  // namespace ferry::rootwrite::sample
