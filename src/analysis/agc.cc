#include "analysis/agc.h"

#include <cstring>

#include "base/hash.h"

namespace ferry::analysis {
namespace {

const std::vector<std::string>& Leaves() {
  static const std::vector<std::string> kLeaves = {
      "Electron_pt", "Electron_eta", "Electron_cutBased", "Electron_sip3d",      "Muon_pt",
      "Muon_eta",    "Muon_tightId", "Muon_sip3d",        "Muon_pfRelIso04_all", "Jet_pt",
      "Jet_eta",     "Jet_phi",      "Jet_mass",          "Jet_btagCSVV2",
  };
  return kLeaves;
}

struct Binning {
  int bins;
  double lo, hi;
};

Binning BinningOf(Observable o) {
  switch (o) {
    case Observable::kHt4j1b:
    case Observable::kMbjj4j2b:
      return {25, 50.0, 550.0};
    case Observable::kLeptonPt:
      return {25, 25.0, 275.0};
  }
  return {1, 0.0, 1.0};
}

// A jagged column viewed as typed values plus per-entry offsets.
template <class T>
struct Jagged {
  std::span<const T> values;
  std::span<const uint64_t> offsets;  // num_entries + 1
  std::span<const T> At(size_t i) const {
    return values.subspan(offsets[i], offsets[i + 1] - offsets[i]);
  }
};

bool Is(rootio::LeafType t, float*) {
  return t == rootio::LeafType::kFloat32;
}
bool Is(rootio::LeafType t, int32_t*) {
  return t == rootio::LeafType::kInt32;
}
bool Is(rootio::LeafType t, uint8_t*) {
  return t == rootio::LeafType::kUInt8 || t == rootio::LeafType::kBool
         || t == rootio::LeafType::kInt8;
}

// Views column c as Jagged<T>, converting into *storage when its stored type differs.
template <class T>
Result<Jagged<T>> View(std::span<const rootio::Column> columns,
                       int c,
                       int64_t entries,
                       std::vector<T>* storage) {
  const rootio::Column& col = columns[static_cast<size_t>(c)];
  if (!col.jagged || col.type == rootio::LeafType::kString || col.num_entries != entries
      || col.offsets.size() != static_cast<size_t>(entries) + 1) {
    return CorruptionError("column #" + std::to_string(c) + " is not a jagged numeric column of "
                           + std::to_string(entries) + " entries");
  }
  Jagged<T> j;
  j.offsets = col.offsets;
  const size_t n = col.num_values();
  if (col.offsets.back() != n) {
    return CorruptionError("column #" + std::to_string(c) + " offsets end at "
                           + std::to_string(col.offsets.back()) + " of " + std::to_string(n)
                           + " values");
  }
  if (Is(col.type, static_cast<T*>(nullptr))) {
    j.values = col.values<T>();
  } else {
    storage->resize(n);
    for (size_t k = 0; k < n; ++k) {
      (*storage)[k] = static_cast<T>(col.AsDouble(k));
    }
    j.values = *storage;
  }
  return j;
}

}  // namespace

std::string_view VariationName(Variation v) {
  switch (v) {
    case Variation::kNominal:
      return "nominal";
    case Variation::kJesUp:
      return "jes_up";
    case Variation::kJesDown:
      return "jes_down";
  }
  return "?";
}

double JesScale(Variation v) {
  switch (v) {
    case Variation::kNominal:
      return 1.0;
    case Variation::kJesUp:
      return 1.03;
    case Variation::kJesDown:
      return 0.97;
  }
  return 1.0;
}

std::string_view ObservableName(Observable o) {
  switch (o) {
    case Observable::kHt4j1b:
      return "ht_4j1b";
    case Observable::kMbjj4j2b:
      return "mbjj_4j2b";
    case Observable::kLeptonPt:
      return "lepton_pt";
  }
  return "?";
}

std::string_view ObservableTitle(Observable o) {
  switch (o) {
    case Observable::kHt4j1b:
      return "H_T in 4j1b [GeV]";
    case Observable::kMbjj4j2b:
      return "m_{bjj} in 4j2b [GeV]";
    case Observable::kLeptonPt:
      return "lepton p_T, selected events [GeV]";
  }
  return "?";
}

void Cutflow::Merge(const Cutflow& o) {
  events += o.events;
  one_lepton += o.one_lepton;
  four_jets += o.four_jets;
  one_btag += o.one_btag;
  region_4j1b += o.region_4j1b;
  region_4j2b += o.region_4j2b;
}

AgcResult::AgcResult() {
  histograms_.reserve(kVariations.size() * kObservables.size());
  for (Variation v : kVariations) {
    for (Observable o : kObservables) {
      Binning b = BinningOf(o);
      histograms_.emplace_back(std::string(ObservableName(o)) + "_" + std::string(VariationName(v)),
                               b.bins, b.lo, b.hi);
    }
  }
}

void AgcResult::Merge(const AgcResult& other) {
  for (size_t i = 0; i < cutflows_.size(); ++i) {
    cutflows_[i].Merge(other.cutflows_[i]);
  }
  for (size_t i = 0; i < histograms_.size(); ++i) {
    histograms_[i].Merge(other.histograms_[i]);
  }
}

uint64_t AgcResult::Digest() const {
  hash::Xxh3Stream h;
  for (const Histogram& hist : histograms_) {
    h.Update(hist.name().data(), hist.name().size());
    const uint64_t d = hist.Digest();
    h.Update(&d, sizeof d);
  }
  for (const Cutflow& c : cutflows_) {
    const uint64_t v[] = {c.events,   c.one_lepton,  c.four_jets,
                          c.one_btag, c.region_4j1b, c.region_4j2b};
    h.Update(v, sizeof v);
  }
  return h.Digest();
}

std::span<const std::string> AgcLeaves() {
  return Leaves();
}

Result<AgcColumnMap> MapAgcColumns(const rootio::ClusterReader& reader) {
  AgcColumnMap m{};
  int* slots[] = {&m.el_pt,   &m.el_eta,      &m.el_cut_based, &m.el_sip3d, &m.mu_pt,
                  &m.mu_eta,  &m.mu_tight_id, &m.mu_sip3d,     &m.mu_iso,   &m.jet_pt,
                  &m.jet_eta, &m.jet_phi,     &m.jet_mass,     &m.jet_btag};
  static_assert(sizeof slots / sizeof slots[0] == 14);
  const auto& leaves = Leaves();
  for (size_t i = 0; i < leaves.size(); ++i) {
    *slots[i] = reader.ColumnOf(leaves[i]);
    if (*slots[i] < 0) {
      return NotFoundError("the reader does not read leaf " + leaves[i]);
    }
  }
  return m;
}

Status AnalyzeUnit(const AgcColumnMap& map,
                   std::span<const rootio::Column> columns,
                   AgcScratch* scratch,
                   AgcResult* out,
                   const AgcCuts& cuts) {
  const int64_t n = columns[static_cast<size_t>(map.jet_pt)].num_entries;
  scratch->floats.resize(11);
  scratch->ints.resize(1);
  scratch->flags.resize(1);
  auto& f = scratch->floats;
  const Jagged<float> el_pt = FERRY_TRY(View(columns, map.el_pt, n, &f[0]));
  const Jagged<float> el_eta = FERRY_TRY(View(columns, map.el_eta, n, &f[1]));
  const Jagged<float> el_sip3d = FERRY_TRY(View(columns, map.el_sip3d, n, &f[2]));
  const Jagged<int32_t> el_id = FERRY_TRY(View(columns, map.el_cut_based, n, &scratch->ints[0]));
  const Jagged<float> mu_pt = FERRY_TRY(View(columns, map.mu_pt, n, &f[3]));
  const Jagged<float> mu_eta = FERRY_TRY(View(columns, map.mu_eta, n, &f[4]));
  const Jagged<float> mu_sip3d = FERRY_TRY(View(columns, map.mu_sip3d, n, &f[5]));
  const Jagged<float> mu_iso = FERRY_TRY(View(columns, map.mu_iso, n, &f[6]));
  const Jagged<uint8_t> mu_id = FERRY_TRY(View(columns, map.mu_tight_id, n, &scratch->flags[0]));
  const Jagged<float> jet_pt = FERRY_TRY(View(columns, map.jet_pt, n, &f[7]));
  const Jagged<float> jet_eta = FERRY_TRY(View(columns, map.jet_eta, n, &f[8]));
  const Jagged<float> jet_phi = FERRY_TRY(View(columns, map.jet_phi, n, &f[9]));
  const Jagged<float> jet_mass = FERRY_TRY(View(columns, map.jet_mass, n, &f[10]));
  std::vector<float> btag_storage;
  const Jagged<float> jet_btag = FERRY_TRY(View(columns, map.jet_btag, n, &btag_storage));

  // Leptons once per event: they do not move with the jet energy scale.
  std::vector<LeptonSelection>& leptons = scratch->leptons;
  leptons.resize(static_cast<size_t>(n));
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    leptons[i] =
        SelectLeptons({el_pt.At(i), el_eta.At(i), el_sip3d.At(i), el_id.At(i)},
                      {mu_pt.At(i), mu_eta.At(i), mu_sip3d.At(i), mu_iso.At(i), mu_id.At(i)}, cuts);
  }

  // One event loop per variation, as separate passes over the unit's events.
  for (Variation v : kVariations) {
    const double scale = JesScale(v);
    Cutflow& cf = out->cutflow(v);
    Histogram& h_ht = out->histogram(v, Observable::kHt4j1b);
    Histogram& h_mbjj = out->histogram(v, Observable::kMbjj4j2b);
    Histogram& h_lep = out->histogram(v, Observable::kLeptonPt);
    cf.events += static_cast<uint64_t>(n);
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (leptons[i].count != 1) {
        continue;
      }
      ++cf.one_lepton;
      Selection s;
      s.leptons = 1;
      s.lepton_pt = leptons[i].pt;
      SelectJets({jet_pt.At(i), jet_eta.At(i), jet_phi.At(i), jet_mass.At(i), jet_btag.At(i)},
                 scale, cuts, &s);
      if (s.jets < 4) {
        continue;
      }
      ++cf.four_jets;
      if (!s.passes) {
        continue;
      }
      ++cf.one_btag;
      h_lep.Fill(s.lepton_pt);
      if (s.region == Region::k4j1b) {
        ++cf.region_4j1b;
        h_ht.Fill(s.ht);
      } else if (s.region == Region::k4j2b) {
        ++cf.region_4j2b;
        if (s.has_trijet) {
          h_mbjj.Fill(s.trijet_mass);
        }
      }
    }
  }
  return OkStatus();
}

}  // namespace ferry::analysis
