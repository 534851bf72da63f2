// The AGC-like selection: the branches an Analysis Grand Challenge style ttbar analysis reads
// from CMS NanoAOD (jets pt/eta/phi/mass/b-tag, electrons and muons pt/eta/phi/id, MET, and the
// collection counters), and the fraction of a dataset's stored bytes they account for (about
// 5-8% on real CMS NanoAOD): the share of the bytes such an analysis has to fetch.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ferry::gen {

struct AgcReport {
  std::vector<std::string> branches;  // the selection as resolved against the schema
  std::vector<std::string> missing;   // wanted roles with no matching branch
  uint64_t selected_bytes = 0;        // stored bytes (basket records) of the selection
  uint64_t total_bytes = 0;           // stored bytes of every branch
  double fraction = 0;
};

// Resolves the selection against the branch names of a schema. Each role lists alternatives
// in order of preference (e.g. Jet_btagCSVV2, else Jet_btagDeepB, else Jet_btagDeepFlavB).
std::vector<std::string> ResolveAgcSelection(std::span<const std::string> available,
                                             std::vector<std::string>* missing);

// Sums the stored bytes of every branch of tree in each file and of the selection. tree may
// also name an RNTuple: a field then costs the pages of its columns (an RVec: its
// collection's offsets and its member), and a column read by several fields counts once.
Result<AgcReport> MeasureAgcFraction(std::span<const std::string> files,
                                     std::string_view tree = "Events");

}  // namespace ferry::gen
