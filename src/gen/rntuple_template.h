// Loading a template from an RNTuple (LoadTemplate's second source; event_template.h).
//
// The layout read is the one ROOT's RNTupleImporter writes for a flat tree, which ferry's
// RntupleWriter writes too (rootwrite/rntuple_model.h): top-level scalar fields become scalar
// branches, std::array<T,N> fields fixed arrays and std::string fields strings; a projected
// RVec field of scalars becomes a jagged branch counted by the cardinality field projected
// from the same collection, which becomes its counter branch (moved before its first RVec, as
// writers need; of the cardinality's type, UInt_t or ULong64_t, whatever the counter's type
// was before the conversion). Field descriptions become branch titles. Other fields (records,
// vectors of strings, RVecs without a cardinality...) are listed in `skipped`.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "gen/event_template.h"
#include "rootio/root_file.h"

namespace ferry::gen {

// The template without the event-id branches LoadTemplate adds. InvalidArgument when the
// RNTuple has no entries or no usable field.
Result<EventTemplate> LoadRntupleTemplate(const rootio::RootFile& file,
                                          const std::string& path,
                                          std::string_view name);

}  // namespace ferry::gen
