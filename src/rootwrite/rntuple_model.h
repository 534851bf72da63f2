// The RNTuple schema of a flat NanoAOD-like tree, laid out as ROOT's RNTupleImporter lays out
// a converted TTree (compare data/rntuple/Run2012BC_DoubleMuParked_Muons_1000evts_*.root):
//
//   scalar branches      top-level leaf fields ("float", "std::int32_t", "bool", ...), one
//                        column each, in declaration order; fixed arrays as repetitive
//                        "std::array<T,N>" fields around a leaf "_0" with the column, strings
//                        as "std::string" fields (an Index column and a Char column)
//   jagged branches      grouped by their counter: one untyped collection field per counter,
//                        "_collection<k>" (an Index column), holding an untyped record "_0"
//                        whose leaf members are the branches (Muon_pt, Muon_eta, ...)
//   projections          per member, a projected "ROOT::VecOps::RVec<T>" field of the branch's
//                        name with a projected "_0" leaf, whose alias columns are the
//                        collection's Index column and the member's column; per counter, a
//                        projected "ROOT::RNTupleCardinality<std::uint32_t>" field of the
//                        counter's name over the collection's Index column
//
// A counter that counts no branch stays a scalar field. Branch titles become the descriptions
// of the top-level fields of their names. Columns use ROOT's default encodings:
// split (zigzag for signed integers, delta for offsets) when compressed, plain otherwise
// (what ROOT does for uncompressed RNTuples); bools are Bit columns.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "rootio/rntuple_schema.h"
#include "rootwrite/tree_writer.h"

namespace ferry::rootwrite {

// Where the values of one branch (in declaration order) go.
struct BranchRoute {
  enum class Kind : uint8_t {
    kScalar,   // its own column (len values per entry)
    kMember,   // a column inside a collection: the branch's values, entry lengths by counter
    kCounter,  // the collection's Index column, from the counts
    kString,   // an Index column of the entries' lengths, then `column + 1` of characters
  };
  Kind kind = Kind::kScalar;
  uint32_t column = 0;  // the physical column the values go to
};

struct RntupleModel {
  rootio::Schema schema;
  std::vector<BranchRoute> routes;      // one per branch
  std::vector<int32_t> counter_branch;  // per branch: its counter's index, -1 when not jagged
};

// ROOT's normalized name of the type an RNTuple leaf of a branch type holds ("float",
// "std::int32_t", "bool"); "" for types this layout does not write (strings).
std::string_view RntupleTypeName(rootio::LeafType type);
// The inverse (also "char" as kInt8); kUnknown for any other name.
rootio::LeafType LeafTypeOfRntupleName(std::string_view name);

// Whether branches[i] has a place in the layout, given the branches before it; *counter gets
// the index of its counter (-1 when not jagged). InvalidArgument names the branch otherwise.
Status CheckRntupleBranch(std::span<const BranchSpec> branches, size_t i, int32_t* counter);

// InvalidArgument for a branch the layout has no place for (jagged strings or jagged fixed
// arrays, a counter declared after its branch, a counter that is not an integer), naming the
// branch.
Result<RntupleModel> BuildRntupleModel(std::span<const BranchSpec> branches, bool split);

}  // namespace ferry::rootwrite
