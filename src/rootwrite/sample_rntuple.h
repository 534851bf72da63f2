// A sample RNTuple of every field shape RntupleWriter writes (test support, not part of
// ferry_rootwrite): a bool and every integer width and float type as scalars, a fixed array,
// strings (some longer than 255 characters), two collections
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
#include "rootio/rntuple_value.h"
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

// What an RNTuple reader must return for a branch's column, entry by entry: scalars, strings,
// lists for jagged columns and fixed arrays, and unsigned counts for the counter of a
// collection (cardinality).
std::vector<rootio::RntupleValue> RntupleValuesOf(const rootio::Column& c, bool cardinality);

// The jsroot cross-check's RNTuple files: the sample (3,000 entries, several clusters of many
// pages) under every codec, written into dir; their paths are appended to written.
Status WriteRntupleFixtures(const std::string& dir, std::vector<std::string>* written);

// JSON of what ferry's reader reads from every RNTuple of a file, for an independent reader
// to compare with: {"ntuples": [{"name", "entries", "fields": {name: {"type", "values"}},
// "skipped": {name: why}}]}. Fields are the top-level scalars; RVec and cardinality fields are
// listed as skipped (jsroot 7.11.2 reads neither per entry, data/rntuple/README.md).
Result<std::string> RntupleValuesJson(const std::string& path);

}  // namespace ferry::rootwrite::sample
