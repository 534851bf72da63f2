// RNTuples in `ferry root ls` and `ferry root dump`, beside TTrees.
//
// ls: per RNTuple its entries, clusters, the field tree with ROOT's type names, and per
// physical column its encoding, pages, stored and uncompressed bytes and codec.
// dump: the same JSON shape as for a TTree, {"tree":NAME,"entries":[A,B],"branches":{...}},
// with one value per entry of each top-level field (records as objects, collections as lists).
#pragma once

#include <string>
#include <vector>

#include "base/json_writer.h"
#include "base/result.h"
#include "rootio/rntuple.h"
#include "rootio/root_file.h"
#include "rootio/tree_model.h"

namespace ferry::cli {

// Appends the "rntuples" array to an open ls object and, unless json, prints the listing.
Status ListRntuples(const rootio::RootFile& file, bool json, JsonWriter& w);

// Prints fields of an RNTuple over an entry range (all readable top-level fields when `fields`
// is empty, a field being unreadable then reported on stderr and skipped).
Status DumpRntuple(const rootio::Rntuple& ntuple,
                   rootio::EntryRange range,
                   const std::vector<std::string>& fields,
                   bool json);

}  // namespace ferry::cli
