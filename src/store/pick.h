// WritePicked: the CMS "pick events" output. Writes the given events of a store, in the given
// order, as a flat TTree or an RNTuple (named like the store's input dataset; the RNTuple laid
// out as ROOT's importer converts such a tree: RVec fields with their cardinalities) in a new
// ROOT file that ROOT, uproot, jsroot and ferry's reader open. Columns as asked (all for an empty
// list); the counter of every jagged column is added when missing. Errors: those of
// Store::ReadEvents (kNotFound names an absent event) and of the ROOT writer (kIo with the path).
#pragma once

#include <span>
#include <string>

#include "base/result.h"
#include "codec/compression.h"
#include "rootwrite/dataset_writer.h"
#include "store/store.h"

namespace ferry::store {

struct PickReport {
  uint64_t events = 0;
  uint64_t branches = 0;
  uint64_t bytes = 0;
};

Result<PickReport> WritePicked(Store& store,
                               std::span<const EventId> ids,
                               std::span<const int32_t> columns,
                               const std::string& path,
                               codec::Setting compression = {codec::Algorithm::kZstd, 5},
                               rootwrite::DatasetFormat format = rootwrite::DatasetFormat::kTree);

}  // namespace ferry::store
