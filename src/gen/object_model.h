// ObjectModel: how the object resampler (GenMode::kObject) takes a template apart into parts
// that it draws independently. Built once from the template (BuildObjectModel, pure).
//
// - Multiplicities: every counter (nJet, nElectron, ...) of a new event comes from one template
//   event, its donor, so the multiplicities keep their correlations (ttbar events with a lepton
//   have more jets) and each follows the template's distribution.
// - Object collections: each object of a new event's collection is drawn from the pool of the
//   template's objects of that collection (every branch of the object together, so an object
//   stays self-consistent) in events of the same multiplicity class: the multiplicities whose
//   events hold at least kClassObjects objects and kClassEvents events, neighbours merged
//   from the lowest up (busy ttbar events have harder jets than events with one jet). Over a
//   dataset every template object is drawn as often as in the template. Where every template
//   event orders the collection by <Coll>_pt, the drawn objects are sorted by their new pt
//   (NanoAOD's order).
// - Whole collections: drawn whole from the donor event, where objects are not
//   interchangeable: vectors indexed by meaning (LHEPdfWeight: one branch named as the
//   collection), collections that point into themselves (GenPart_genPartIdxMother) and those
//   with a pt the template does not order by (GenPart, LHEPart, SV: their order means something).
//   Their floats move together per event (a coherent kernel: one pt scale, one eta shift, one
//   phi rotation per event), so a decay tree keeps its kinematics and a weight vector its
//   shape.
// - Event-level branches: grouped by the name before the first '_' (MET_pt, MET_phi, MET_sumEt
//   together; HLT_*; PV_*), each group from its own template event. Generator-level groups
//   (names starting with gen, Gen or LHE, case-insensitively: genWeight, Generator_*,
//   GenMET_*, LHE_*, LHEWeight_*) come from the donor, with the generator record.
// - Index branches (<Coll>_<target>Idx*, e.g. Jet_muonIdx1, Electron_genPartIdx) are kept
//   within the new event's target collection: an index past its end becomes -1.
// - Floats and doubles get a FloatKernel fitted to their pool (all the template's values of
//   the branch); other types are copied.
//
// Lost by construction: correlations between objects of an event (the jets of a new event do
// not balance its MET, the lepton is not the jets' neighbour), between groups, and between
// event-level branches and the objects.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gen/event_template.h"
#include "gen/float_kernel.h"
#include "rootio/column.h"

namespace ferry::gen {

inline constexpr uint64_t kClassObjects = 64;
inline constexpr uint64_t kClassEvents = 16;

struct CollectionModel {
  std::string name;      // "Jet" for counter nJet
  int32_t counter = -1;  // branch index of the counter
  std::vector<int32_t> members;
  bool whole = false;              // drawn whole from the donor event
  int32_t sort_key = -1;           // member branch (<name>_pt) the objects are ordered by, or -1
  std::vector<uint32_t> counts;    // per template entry
  std::vector<uint64_t> first;     // per template entry, and the total: index of its first object
  std::vector<uint32_t> class_of;  // per multiplicity 0..max: its class
  std::vector<std::vector<uint32_t>> class_objects;  // per class: pool indices of its objects
};

struct EventGroup {
  std::string key;  // the shared name prefix
  std::vector<int32_t> branches;
  bool with_donor = false;  // drawn from the donor event (generator-level branches)
};

struct ObjectModel {
  std::vector<CollectionModel> collections;
  std::vector<EventGroup> groups;
  // Per template branch:
  std::vector<int32_t> collection_of;  // its collection (members and counter), or -1
  std::vector<int32_t> group_of;       // its event-level group, or -1
  std::vector<int32_t> index_target;   // the collection an index branch points into, or -1
  // kCopy for non-floating branches; a resampled branch's centres and widths are moved into
  // the two columns below (its kernel keeps shape, bounds, atoms and precision).
  std::vector<FloatKernel> kernels;
  // Where a kernel resamples the branch: its centres and widths (float) in the layout of the
  // template's column (same offsets), the sources the resampler gathers from; else empty.
  std::vector<rootio::Column> centres;
  std::vector<rootio::Column> widths;
};

ObjectModel BuildObjectModel(const EventTemplate& tmpl);

}  // namespace ferry::gen
