// EventTemplate: the schema and the values of a template dataset (by default a real CMS
// NanoAOD file), loaded whole into memory for resampling. It is read through rootio::Dataset,
// so a TTree and an RNTuple laid out as ROOT's RNTupleImporter converts a flat tree give the
// same template: a branch per readable flat field (scalars, fixed arrays, strings, and jagged
// fields counted by a counter branch — an RNTuple's projected RVecs by the cardinality field
// over the same collection, of the cardinality's type), titles from branch titles or field
// descriptions. Branches keep the dataset's field order, except that a counter is moved before
// the first branch it counts (the writer needs counters first). Fields that are not flat (a
// TTree's object branches and leaf lists, an RNTuple's records, collections without a
// cardinality...) are left out and listed in `skipped`.
//
// If the template lacks run, luminosityBlock or event, they are added (UInt_t, UInt_t,
// ULong64_t) without values: the generator always writes them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "rootio/column.h"
#include "rootwrite/tree_writer.h"

namespace ferry::gen {

struct TemplateBranch {
  rootwrite::BranchSpec spec;
  rootio::Column values;  // every template entry (empty for added id branches)
};

struct EventTemplate {
  std::string path;
  std::string tree_title;
  int64_t entries = 0;
  std::vector<TemplateBranch> branches;
  std::vector<std::string> skipped;
  int32_t run = -1;  // indices into branches
  int32_t lumi = -1;
  int32_t event = -1;

  int32_t Find(std::string_view name) const;
};

// Loads the dataset `tree` (default "Events", a TTree or an RNTuple) of the ROOT file at path.
// InvalidArgument when it has no entries or no readable flat field.
Result<EventTemplate> LoadTemplate(const std::string& path, std::string_view tree = "Events");

}  // namespace ferry::gen
