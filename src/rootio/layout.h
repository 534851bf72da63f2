// FileLayout: where the data of a file's datasets lies, in a form that does not depend on the
// format — for code that plans reads of a file without parsing its records (the cache's
// read-ahead; the replica tier next). A dataset (a TTree or an RNTuple) has columns (branches;
// RNTuple physical columns), and each column the units a reader reads whole (basket records;
// pages with their checksums), in entry order, with their offsets, sizes and entries, and the
// dataset's clusters (the entry ranges written together).
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
class Rntuple;

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

// An RNTuple's layout: a column per physical column, named by its field's path ("Muon.pt"),
// with "#k" for the k-th column of a field that has several (a string's offsets and chars); a
// unit per page. A page counts elements, not entries: a page of cluster c is given the share
// of c's entries its elements are of the column's elements in c — exact for a scalar field,
// proportional for a collection's items — so that units stay inside their cluster, in order.
LayoutSet RntupleLayout(const Rntuple& ntuple);

// The layout of every dataset of `file` that opens, TTrees then RNTuples (one that does not
// parse is left out).
Result<std::vector<LayoutSet>> LoadLayout(RootFile& file);

}  // namespace ferry::rootio
