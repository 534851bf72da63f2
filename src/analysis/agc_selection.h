// The AGC CMS ttbar selection (IRIS-HEP Analysis Grand Challenge) on one NanoAOD event.
//
// Objects (thresholds in AgcCuts):
// - electrons: pt > 25 GeV, |eta| < 2.1, cut-based id tight (Electron_cutBased == 4),
//   sip3d < 4;
// - muons: pt > 25 GeV, |eta| < 2.1, tight id, pfRelIso04_all < 0.15, sip3d < 4;
// - jets: pt x JES scale > 25 GeV, |eta| < 2.4; b-tagged when btagCSVV2 >= 0.5.
// Event: exactly one lepton (electron or muon), >= 4 jets, >= 1 b-tagged jet. Regions:
// 4j1b = exactly one b-tag (observable HT, the scalar sum of the jets' pt), 4j2b = two or more
// (observable m_bjj: the mass of the three-jet combination with the largest vector-sum pt that
// contains at least one b-tagged jet).
//
// Jet-energy-scale variations multiply every jet's pt by the scale before any cut (so a
// variation changes which events pass), as the AGC reference does; mass, eta, phi are kept.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstdint>
#include <span>

namespace ferry::analysis {

struct AgcCuts {
  double lepton_pt = 25.0;
  double electron_abs_eta = 2.1;
  int32_t electron_cut_based = 4;  // tight
  double muon_abs_eta = 2.1;
  double muon_pf_rel_iso04 = 0.15;
  double lepton_sip3d = 4.0;
  double jet_pt = 25.0;
  double jet_abs_eta = 2.4;
  double btag = 0.5;  // Jet_btagCSVV2
};

// One event's collections: parallel spans, one element per object.
struct Electrons {
  std::span<const float> pt, eta, sip3d;
  std::span<const int32_t> cut_based;
};
struct Muons {
  std::span<const float> pt, eta, sip3d, pf_rel_iso04;
  std::span<const uint8_t> tight_id;  // Bool_t, 0 or 1
};
struct Jets {
  std::span<const float> pt, eta, phi, mass, btag;
};
struct Event {
  Electrons electrons;
  Muons muons;
  Jets jets;
};

enum class Region : uint8_t { kNone, k4j1b, k4j2b };

struct Selection {
  int leptons = 0;      // selected electrons + muons
  int jets = 0;         // selected jets
  int bjets = 0;        // selected b-tagged jets
  bool passes = false;  // exactly one lepton, >= 4 jets, >= 1 b-tag
  Region region = Region::kNone;
  double lepton_pt = 0;    // of the single lepton when leptons == 1
  double ht = 0;           // sum of the selected jets' (scaled) pt
  double trijet_mass = 0;  // m_bjj; set when has_trijet
  bool has_trijet = false;
};

Selection SelectEvent(const Event& event, double jes_scale, const AgcCuts& cuts = {});

// The two halves of SelectEvent. Leptons do not depend on the jet energy scale, so an event
// loop per variation may select them once per event and run only the jet part per variation.
struct LeptonSelection {
  int count = 0;
  double pt = 0;  // of the last selected lepton (the only one when count == 1)
};
LeptonSelection SelectLeptons(const Electrons& electrons, const Muons& muons, const AgcCuts& cuts);
// Fills jets, bjets, ht, passes, region and the trijet of *s; s->leptons must be set.
void SelectJets(const Jets& jets, double jes_scale, const AgcCuts& cuts, Selection* s);

// Mass of the three-jet combination of largest vector-sum pt containing a b-tagged jet, among
// the jets whose index is listed in `jets` (pt already scaled in scaled_pt). False when there
// are fewer than 3 jets or no combination contains a b-tag. Ties keep the first combination
// in (i < j < k) order.
bool BestTrijetMass(const Jets& all,
                    std::span<const double> scaled_pt,
                    std::span<const uint32_t> jets,
                    double btag_cut,
                    double* mass);

}  // namespace ferry::analysis
