#include "analysis/agc_selection.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace ferry::analysis {
namespace {

// Jets kept per event for the trijet search; NanoAOD events have far fewer selected jets, so
// this only bounds the work on corrupt or synthetic input (C(64,3) = 41664 combinations).
constexpr size_t kMaxSelectedJets = 64;

struct P4 {
  double px = 0, py = 0, pz = 0, e = 0;
};

P4 JetP4(double pt, double eta, double phi, double mass) {
  P4 p;
  p.px = pt * std::cos(phi);
  p.py = pt * std::sin(phi);
  p.pz = pt * std::sinh(eta);
  p.e = std::sqrt(p.px * p.px + p.py * p.py + p.pz * p.pz + mass * mass);
  return p;
}

template <class T>
bool InRange(std::span<const T> s, size_t n) {
  return s.size() >= n;
}

}  // namespace

bool BestTrijetMass(const Jets& all,
                    std::span<const double> scaled_pt,
                    std::span<const uint32_t> jets,
                    double btag_cut,
                    double* mass) {
  const size_t n = std::min(jets.size(), kMaxSelectedJets);
  if (n < 3) {
    return false;
  }
  std::array<P4, kMaxSelectedJets> p4;
  std::array<bool, kMaxSelectedJets> tagged{};
  for (size_t a = 0; a < n; ++a) {
    const uint32_t j = jets[a];
    p4[a] = JetP4(scaled_pt[j], all.eta[j], all.phi[j], all.mass[j]);
    tagged[a] = all.btag[j] >= btag_cut;
  }
  bool found = false;
  double best_pt2 = -1;
  double best_mass = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      for (size_t k = j + 1; k < n; ++k) {
        if (!tagged[i] && !tagged[j] && !tagged[k]) {
          continue;
        }
        const double px = p4[i].px + p4[j].px + p4[k].px;
        const double py = p4[i].py + p4[j].py + p4[k].py;
        const double pt2 = px * px + py * py;
        if (pt2 > best_pt2) {
          const double pz = p4[i].pz + p4[j].pz + p4[k].pz;
          const double e = p4[i].e + p4[j].e + p4[k].e;
          best_pt2 = pt2;
          best_mass = std::sqrt(std::max(0.0, e * e - pt2 - pz * pz));
          found = true;
        }
      }
    }
  }
  if (found) {
    *mass = best_mass;
  }
  return found;
}

LeptonSelection SelectLeptons(const Electrons& el, const Muons& mu, const AgcCuts& cuts) {
  LeptonSelection s;
  const size_t n_el = el.pt.size();
  if (InRange(el.eta, n_el) && InRange(el.sip3d, n_el) && InRange(el.cut_based, n_el)) {
    for (size_t i = 0; i < n_el; ++i) {
      if (el.pt[i] > cuts.lepton_pt && std::fabs(el.eta[i]) < cuts.electron_abs_eta
          && el.cut_based[i] == cuts.electron_cut_based && el.sip3d[i] < cuts.lepton_sip3d) {
        ++s.count;
        s.pt = el.pt[i];
      }
    }
  }
  const size_t n_mu = mu.pt.size();
  if (InRange(mu.eta, n_mu) && InRange(mu.sip3d, n_mu) && InRange(mu.pf_rel_iso04, n_mu)
      && InRange(mu.tight_id, n_mu)) {
    for (size_t i = 0; i < n_mu; ++i) {
      if (mu.pt[i] > cuts.lepton_pt && std::fabs(mu.eta[i]) < cuts.muon_abs_eta
          && mu.tight_id[i] != 0 && mu.pf_rel_iso04[i] < cuts.muon_pf_rel_iso04
          && mu.sip3d[i] < cuts.lepton_sip3d) {
        ++s.count;
        s.pt = mu.pt[i];
      }
    }
  }
  return s;
}

void SelectJets(const Jets& jt, double jes_scale, const AgcCuts& cuts, Selection* s) {
  size_t n_jet = jt.pt.size();
  if (!InRange(jt.eta, n_jet) || !InRange(jt.phi, n_jet) || !InRange(jt.mass, n_jet)
      || !InRange(jt.btag, n_jet)) {
    n_jet = 0;
  }
  // Scaled pt of every jet and the indices of the selected ones (at most kMaxJetsPerEvent jets
  // are looked at).
  constexpr size_t kMaxJetsPerEvent = 256;
  n_jet = std::min(n_jet, kMaxJetsPerEvent);
  std::array<double, kMaxJetsPerEvent> scaled;  // only [0, n_jet) is read
  std::array<uint32_t, kMaxJetsPerEvent> selected;
  size_t n_sel = 0;
  s->ht = 0;
  s->bjets = 0;
  for (size_t i = 0; i < n_jet; ++i) {
    scaled[i] = static_cast<double>(jt.pt[i]) * jes_scale;
    if (scaled[i] > cuts.jet_pt && std::fabs(jt.eta[i]) < cuts.jet_abs_eta) {
      selected[n_sel++] = static_cast<uint32_t>(i);
      s->ht += scaled[i];
      if (jt.btag[i] >= cuts.btag) {
        ++s->bjets;
      }
    }
  }
  s->jets = static_cast<int>(n_sel);
  s->passes = s->leptons == 1 && s->jets >= 4 && s->bjets >= 1;
  s->region = Region::kNone;
  s->has_trijet = false;
  if (!s->passes) {
    return;
  }
  if (s->bjets == 1) {
    s->region = Region::k4j1b;
  } else {
    s->region = Region::k4j2b;
    s->has_trijet = BestTrijetMass(jt, std::span<const double>(scaled.data(), n_jet),
                                   std::span<const uint32_t>(selected.data(), n_sel), cuts.btag,
                                   &s->trijet_mass);
  }
}

Selection SelectEvent(const Event& event, double jes_scale, const AgcCuts& cuts) {
  Selection s;
  const LeptonSelection leptons = SelectLeptons(event.electrons, event.muons, cuts);
  s.leptons = leptons.count;
  s.lepton_pt = leptons.pt;
  SelectJets(event.jets, jes_scale, cuts, &s);
  return s;
}

}  // namespace ferry::analysis
