// The AGC ttbar analysis over decoded columns: the NanoAOD leaves it reads, its histograms
// and cut flows per jet-energy-scale variation, and the event loops that fill them.
//
// Per variation (nominal, JES up x1.03, JES down x0.97) one event loop runs over the unit's
// events and fills three histograms: HT in 4j1b, m_bjj in 4j2b, and the lepton pt of every
// selected event — nine histograms in all, as the AGC reference fills them concurrently.
// Thread-safety: AgcResult is a value type; AnalyzeUnit is a pure function of its inputs.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/agc_selection.h"
#include "analysis/histogram.h"
#include "base/result.h"
#include "rootio/column.h"
#include "rootio/dataset.h"

namespace ferry::analysis {

enum class Variation : uint8_t { kNominal, kJesUp, kJesDown };
inline constexpr std::array<Variation, 3> kVariations = {Variation::kNominal, Variation::kJesUp,
                                                         Variation::kJesDown};
std::string_view VariationName(Variation v);  // "nominal", "jes_up", "jes_down"
double JesScale(Variation v);                 // 1.0, 1.03, 0.97

enum class Observable : uint8_t { kHt4j1b, kMbjj4j2b, kLeptonPt };
inline constexpr std::array<Observable, 3> kObservables = {
    Observable::kHt4j1b, Observable::kMbjj4j2b, Observable::kLeptonPt};
std::string_view ObservableName(Observable o);   // "ht_4j1b", "mbjj_4j2b", "lepton_pt"
std::string_view ObservableTitle(Observable o);  // axis title with unit

// Events passing each step of the selection, in order.
struct Cutflow {
  uint64_t events = 0;
  uint64_t one_lepton = 0;  // exactly one selected lepton
  uint64_t four_jets = 0;   // ... and >= 4 jets
  uint64_t one_btag = 0;    // ... and >= 1 b-tag (the selected events)
  uint64_t region_4j1b = 0;
  uint64_t region_4j2b = 0;
  void Merge(const Cutflow& o);
  bool operator==(const Cutflow&) const = default;
};

class AgcResult {
 public:
  AgcResult();
  Cutflow& cutflow(Variation v) { return cutflows_[static_cast<size_t>(v)]; }
  const Cutflow& cutflow(Variation v) const { return cutflows_[static_cast<size_t>(v)]; }
  Histogram& histogram(Variation v, Observable o) { return histograms_[Index(v, o)]; }
  const Histogram& histogram(Variation v, Observable o) const { return histograms_[Index(v, o)]; }
  // Variation-major: nominal's three, then jes_up's, then jes_down's.
  const std::vector<Histogram>& histograms() const { return histograms_; }
  void Merge(const AgcResult& other);
  // XXH3 over every histogram's name and digest, and every cut flow: equal digests mean the
  // same counts and the same bin contents.
  uint64_t Digest() const;

 private:
  static size_t Index(Variation v, Observable o) {
    return static_cast<size_t>(v) * kObservables.size() + static_cast<size_t>(o);
  }
  std::array<Cutflow, kVariations.size()> cutflows_;
  std::vector<Histogram> histograms_;
};

// The leaves the analysis reads (a TTree's reader adds their counters); in an RNTuple, the
// fields of these names (the RVecs RNTupleImporter projects from the collections).
std::span<const std::string> AgcLeaves();

// Column indices of AgcLeaves() in a cluster reader's column order.
struct AgcColumnMap {
  int el_pt, el_eta, el_cut_based, el_sip3d;
  int mu_pt, mu_eta, mu_tight_id, mu_sip3d, mu_iso;
  int jet_pt, jet_eta, jet_phi, jet_mass, jet_btag;
};
Result<AgcColumnMap> MapAgcColumns(const rootio::ClusterReader& reader);

// Per-thread scratch for type conversions, reused across units.
struct AgcScratch {
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<int32_t>> ints;
  std::vector<std::vector<uint8_t>> flags;
  std::vector<LeptonSelection> leptons;  // per event of the unit
};

// Runs the three event loops over one unit's columns and adds to *out. The lepton selection,
// which no variation changes, is made once per event before the loops. Corruption when the
// columns do not have the shapes NanoAOD gives them.
Status AnalyzeUnit(const AgcColumnMap& map,
                   std::span<const rootio::Column> columns,
                   AgcScratch* scratch,
                   AgcResult* out,
                   const AgcCuts& cuts = {});

}  // namespace ferry::analysis
