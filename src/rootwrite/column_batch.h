// Column batches, the input both writers take (TreeWriter::WriteColumns,
// RntupleWriter::WriteColumns): one rootio::Column per declared branch, all over the same
// entries, counters included.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "rootio/column.h"
#include "rootwrite/tree_writer.h"

namespace ferry::rootwrite {

// An integer counter value from native bytes; negative values come back as huge numbers and
// fail the count checks.
uint64_t LoadCount(rootio::LeafType t, const uint8_t* p);

// Checks a batch against the branch declarations: one column per branch, each of the branch's
// type and shape over the same number of entries (*n), jagged columns with as many values per
// entry as their counter (count_of[i], -1 when not jagged) says. InvalidArgument names the
// branch and the first bad entry. counts[c] receives counter branch c's values (other
// entries are left alone), loaded once per batch.
Status CheckColumnBatch(std::span<const BranchSpec> specs,
                        std::span<const int32_t> count_of,
                        std::span<const rootio::Column* const> columns,
                        int64_t* n,
                        std::vector<std::vector<uint64_t>>* counts);

}  // namespace ferry::rootwrite
