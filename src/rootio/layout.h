// FileLayout: where the data of a file's datasets lies, in a form that does not depend on the
// format — for code that plans reads of a file without parsing its records (the cache's
// read-ahead; the replica tier and RNTuple next). A dataset (a TTree today, an RNTuple next)
// has columns (branches; RNTuple columns), and each column the units a reader reads whole
// (baskets; pages), in entry order, with their offsets, sizes and entries, and the dataset's
// clusters (the entry ranges written together).
//
// Units that cannot be fetched on their own (baskets embedded in the TTree record) are left out.
// Thread-safety: values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "rootio/tree_model.h"

namespace ferry::rootio {

class RootFile;

struct LayoutUnit {
  uint64_t offset = 0;  // where its record starts in the file
  uint32_t bytes = 0;   // its record's size on disk
  int64_t first_entry = 0;
  int64_t entries = 0;
  int64_t end_entry() const { return first_entry + entries; }
};

struct LayoutColumn {
  std::string name;
  std::vector<LayoutUnit> units;  // by first entry
};

struct LayoutSet {
  std::string name;  // a tree's path in its directories ("dir/Events"), or its name
  int64_t entries = 0;
  std::vector<EntryRange> clusters;
  std::vector<LayoutColumn> columns;

  // Index of the column called `name`, or -1.
  int32_t FindColumn(std::string_view column) const;
};

// A TTree's layout: a column per branch (sub-branches included), a unit per basket record.
LayoutSet TreeLayout(const TreeInfo& tree);

// The layout of every dataset of `file` that opens (a tree that does not parse is left out).
Result<std::vector<LayoutSet>> LoadLayout(RootFile& file);

}  // namespace ferry::rootio
