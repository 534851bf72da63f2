// Behind rootio/dataset.h, for its two implementations only (tree_dataset.cc,
// rntuple_dataset.cc) and their cluster readers: DatasetScratch's parts, one per format, and
// the format's opener that Dataset::Open picks.
#pragma once

#include <memory>
#include <string_view>

#include "rootio/basket.h"
#include "rootio/dataset.h"
#include "rootio/rntuple_columns.h"

namespace ferry::rootio {

struct DatasetScratch::Parts {
  BasketDecoder decoder;
  RntupleScratch rntuple;
};

Result<std::unique_ptr<Dataset>> OpenTreeDataset(std::unique_ptr<RootFile> file,
                                                 std::string_view name);
Result<std::unique_ptr<Dataset>> OpenRntupleDataset(std::unique_ptr<RootFile> file,
                                                    std::string_view name);

}  // namespace ferry::rootio
