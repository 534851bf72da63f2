// The AGC selection on hand-built events: lepton counting, jet and b-tag counting, the trijet
// choice and the jet-energy-scale variations; and the event loops over hand-built columns.
#include "analysis/agc_selection.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/agc.h"

namespace ferry::analysis {
namespace {

// Owns the values an Event views.
struct EventData {
  std::vector<float> el_pt, el_eta, el_sip3d;
  std::vector<int32_t> el_id;
  std::vector<float> mu_pt, mu_eta, mu_sip3d, mu_iso;
  std::vector<uint8_t> mu_tight;
  std::vector<float> jet_pt, jet_eta, jet_phi, jet_mass, jet_btag;

  void AddElectron(float pt, float eta = 0.5f, int32_t id = 4, float sip3d = 1.0f) {
    el_pt.push_back(pt);
    el_eta.push_back(eta);
    el_id.push_back(id);
    el_sip3d.push_back(sip3d);
  }
  void AddMuon(
      float pt, float eta = -0.5f, bool tight = true, float iso = 0.05f, float sip3d = 1.0f) {
    mu_pt.push_back(pt);
    mu_eta.push_back(eta);
    mu_tight.push_back(tight ? 1 : 0);
    mu_iso.push_back(iso);
    mu_sip3d.push_back(sip3d);
  }
  void AddJet(float pt, float btag = 0.1f, float eta = 0.0f, float phi = 0.0f, float mass = 0.0f) {
    jet_pt.push_back(pt);
    jet_eta.push_back(eta);
    jet_phi.push_back(phi);
    jet_mass.push_back(mass);
    jet_btag.push_back(btag);
  }
  Event View() const {
    Event e;
    e.electrons = {el_pt, el_eta, el_sip3d, el_id};
    e.muons = {mu_pt, mu_eta, mu_sip3d, mu_iso, mu_tight};
    e.jets = {jet_pt, jet_eta, jet_phi, jet_mass, jet_btag};
    return e;
  }
};

// One good electron and four good jets, one of them b-tagged: a 4j1b event.
EventData Baseline() {
  EventData d;
  d.AddElectron(40);
  d.AddJet(100, 0.9f, 0.1f, 0.0f, 10);
  d.AddJet(80, 0.1f, -0.3f, 1.5f, 8);
  d.AddJet(60, 0.2f, 1.0f, 3.0f, 6);
  d.AddJet(40, 0.3f, -1.2f, -2.0f, 5);
  return d;
}

TEST(AgcSelection, BaselineIs4j1bWithHt) {
  Selection s = SelectEvent(Baseline().View(), 1.0);
  EXPECT_EQ(s.leptons, 1);
  EXPECT_EQ(s.jets, 4);
  EXPECT_EQ(s.bjets, 1);
  EXPECT_TRUE(s.passes);
  EXPECT_EQ(s.region, Region::k4j1b);
  EXPECT_DOUBLE_EQ(s.ht, 280);
  EXPECT_DOUBLE_EQ(s.lepton_pt, 40);
  EXPECT_FALSE(s.has_trijet);
}

TEST(AgcSelection, CountsOnlyGoodLeptons) {
  struct Case {
    const char* what;
    void (*add)(EventData&);
    int leptons;
  };
  const Case cases[] = {
      {"soft electron", [](EventData& d) { d.AddElectron(20); }, 1},
      {"forward electron", [](EventData& d) { d.AddElectron(40, 2.3f); }, 1},
      {"loose electron id", [](EventData& d) { d.AddElectron(40, 0.0f, 3); }, 1},
      {"displaced electron", [](EventData& d) { d.AddElectron(40, 0.0f, 4, 5.0f); }, 1},
      {"good electron", [](EventData& d) { d.AddElectron(30); }, 2},
      {"non-tight muon", [](EventData& d) { d.AddMuon(40, 0.0f, false); }, 1},
      {"non-isolated muon", [](EventData& d) { d.AddMuon(40, 0.0f, true, 0.2f); }, 1},
      {"displaced muon", [](EventData& d) { d.AddMuon(40, 0.0f, true, 0.05f, 4.5f); }, 1},
      {"forward muon", [](EventData& d) { d.AddMuon(40, -2.2f); }, 1},
      {"good muon", [](EventData& d) { d.AddMuon(26); }, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EventData d = Baseline();
    c.add(d);
    Selection s = SelectEvent(d.View(), 1.0);
    EXPECT_EQ(s.leptons, c.leptons);
    EXPECT_EQ(s.passes, c.leptons == 1);
    EXPECT_EQ(s.region, c.leptons == 1 ? Region::k4j1b : Region::kNone);
  }
  // A single muon instead of the electron selects the event as well.
  EventData mu = Baseline();
  mu.el_pt.clear(), mu.el_eta.clear(), mu.el_id.clear(), mu.el_sip3d.clear();
  mu.AddMuon(55);
  Selection s = SelectEvent(mu.View(), 1.0);
  EXPECT_EQ(s.leptons, 1);
  EXPECT_TRUE(s.passes);
  EXPECT_DOUBLE_EQ(s.lepton_pt, 55);
  // No lepton at all.
  EventData none = Baseline();
  none.el_pt.clear(), none.el_eta.clear(), none.el_id.clear(), none.el_sip3d.clear();
  EXPECT_FALSE(SelectEvent(none.View(), 1.0).passes);
}

TEST(AgcSelection, JetCountsAndBtagRegions) {
  EventData d = Baseline();
  d.AddJet(24.9f, 0.99f);     // below threshold: neither jet nor b-tag
  d.AddJet(90, 0.99f, 2.5f);  // outside |eta| < 2.4
  Selection s = SelectEvent(d.View(), 1.0);
  EXPECT_EQ(s.jets, 4);
  EXPECT_EQ(s.bjets, 1);
  EXPECT_EQ(s.region, Region::k4j1b);

  EventData three = Baseline();
  three.jet_pt[3] = 20;  // only three jets left
  s = SelectEvent(three.View(), 1.0);
  EXPECT_EQ(s.jets, 3);
  EXPECT_FALSE(s.passes);

  EventData untagged = Baseline();
  untagged.jet_btag[0] = 0.49f;
  s = SelectEvent(untagged.View(), 1.0);
  EXPECT_EQ(s.bjets, 0);
  EXPECT_FALSE(s.passes);

  EventData at_cut = Baseline();
  at_cut.jet_btag[1] = 0.5f;  // >= threshold counts
  s = SelectEvent(at_cut.View(), 1.0);
  EXPECT_EQ(s.bjets, 2);
  EXPECT_EQ(s.region, Region::k4j2b);
  EXPECT_TRUE(s.has_trijet);
}

// Invariant mass of massless jets at eta = 0 from their pt and phi.
double MasslessMass(std::initializer_list<std::pair<double, double>> pt_phi) {
  double e = 0, px = 0, py = 0;
  for (auto [pt, phi] : pt_phi) {
    e += pt;
    px += pt * std::cos(phi);
    py += pt * std::sin(phi);
  }
  return std::sqrt(e * e - px * px - py * py);
}

TEST(AgcSelection, TrijetIsLargestPtCombinationWithBtag) {
  // Jets 0,1,2 point the same way (largest trijet pt) but none is b-tagged; jet 3 is tagged
  // and jet 4 too. The best tagged combination is the highest-pt triple containing 3 or 4.
  EventData d;
  d.AddMuon(35);
  d.AddJet(120, 0.1f, 0, 0.0f);  // 0
  d.AddJet(110, 0.1f, 0, 0.1f);  // 1
  d.AddJet(100, 0.1f, 0, 0.2f);  // 2
  d.AddJet(50, 0.8f, 0, 3.0f);   // 3, tagged, opposite side
  d.AddJet(45, 0.7f, 0, 0.3f);   // 4, tagged, same side as 0..2
  Selection s = SelectEvent(d.View(), 1.0);
  ASSERT_EQ(s.region, Region::k4j2b);
  ASSERT_TRUE(s.has_trijet);
  // Candidates with a tag: (0,1,4) has the largest vector pt.
  EXPECT_NEAR(s.trijet_mass, MasslessMass({{120, 0.0}, {110, 0.1}, {45, 0.3}}), 1e-3);

  // Only three jets pass: if one is tagged, it is the triple itself.
  std::vector<double> pt = {60, 50, 40};
  std::vector<uint32_t> idx = {0, 1, 2};
  EventData t;
  t.AddJet(60, 0.9f, 0, 0.0f);
  t.AddJet(50, 0.1f, 0, 2.0f);
  t.AddJet(40, 0.1f, 0, -2.0f);
  double m = 0;
  ASSERT_TRUE(BestTrijetMass(t.View().jets, pt, idx, 0.5, &m));
  EXPECT_NEAR(m, MasslessMass({{60, 0.0}, {50, 2.0}, {40, -2.0}}), 1e-3);
  // No tagged jet: no trijet; fewer than three jets: none either.
  t.jet_btag[0] = 0.1f;
  EXPECT_FALSE(BestTrijetMass(t.View().jets, pt, idx, 0.5, &m));
  EXPECT_FALSE(BestTrijetMass(t.View().jets, pt, std::span<const uint32_t>(idx).first(2), 0.5, &m));
}

TEST(AgcSelection, TrijetMassUsesJetMassAndEta) {
  // Two back-to-back pairs with mass and eta: compare with an explicit four-vector sum.
  EventData d;
  d.AddJet(70, 0.9f, 0.5f, 0.2f, 12);
  d.AddJet(65, 0.1f, -1.0f, 2.0f, 9);
  d.AddJet(30, 0.1f, 1.8f, -1.1f, 4);
  std::vector<double> pt = {70, 65, 30};
  std::vector<uint32_t> idx = {0, 1, 2};
  double e = 0, px = 0, py = 0, pz = 0;
  for (size_t i = 0; i < 3; ++i) {
    double x = pt[i] * std::cos(d.jet_phi[i]), y = pt[i] * std::sin(d.jet_phi[i]);
    double z = pt[i] * std::sinh(d.jet_eta[i]);
    e += std::sqrt(x * x + y * y + z * z + d.jet_mass[i] * d.jet_mass[i]);
    px += x, py += y, pz += z;
  }
  double m = 0;
  ASSERT_TRUE(BestTrijetMass(d.View().jets, pt, idx, 0.5, &m));
  EXPECT_NEAR(m, std::sqrt(e * e - px * px - py * py - pz * pz), 1e-6);
}

TEST(AgcSelection, JesVariationMovesJetsAcrossThreshold) {
  EventData d = Baseline();
  d.jet_pt[3] = 24.5f;  // fails nominally, 25.235 with JES up
  EXPECT_FALSE(SelectEvent(d.View(), JesScale(Variation::kNominal)).passes);
  Selection up = SelectEvent(d.View(), JesScale(Variation::kJesUp));
  EXPECT_TRUE(up.passes);
  EXPECT_NEAR(up.ht, (100 + 80 + 60 + 24.5) * 1.03, 1e-4);

  EventData e = Baseline();
  e.jet_pt[3] = 25.5f;  // passes nominally, 24.735 with JES down
  EXPECT_TRUE(SelectEvent(e.View(), 1.0).passes);
  EXPECT_FALSE(SelectEvent(e.View(), JesScale(Variation::kJesDown)).passes);
  // Leptons do not move with the jet energy scale.
  EXPECT_EQ(SelectEvent(e.View(), JesScale(Variation::kJesDown)).leptons, 1);
  // HT scales linearly when the jet set does not change.
  Selection nom = SelectEvent(Baseline().View(), 1.0);
  Selection dn = SelectEvent(Baseline().View(), 0.97);
  EXPECT_NEAR(dn.ht, nom.ht * 0.97, 1e-9);
}

TEST(AgcSelection, TrijetMassScalesWithJes) {
  EventData d = Baseline();
  d.jet_btag[1] = 0.9f;  // 4j2b
  Selection nom = SelectEvent(d.View(), 1.0);
  Selection up = SelectEvent(d.View(), 1.03);
  ASSERT_TRUE(nom.has_trijet && up.has_trijet);
  EXPECT_GT(up.trijet_mass, nom.trijet_mass);
  EXPECT_LT(up.trijet_mass, nom.trijet_mass * 1.03 + 1e-9);  // jet masses are not scaled
}

TEST(AgcSelection, MismatchedCollectionsAreIgnoredNotRead) {
  EventData d = Baseline();
  d.jet_phi.pop_back();  // shorter than jet_pt: the jets are ignored
  Selection s = SelectEvent(d.View(), 1.0);
  EXPECT_EQ(s.jets, 0);
  EXPECT_FALSE(s.passes);
}

// A jagged column of 4-byte values from per-event vectors.
template <class T>
rootio::Column Jagged(rootio::LeafType type, const std::vector<std::vector<T>>& events) {
  rootio::Column c;
  c.type = type;
  c.jagged = true;
  c.num_entries = static_cast<int64_t>(events.size());
  c.offsets.push_back(0);
  for (const auto& ev : events) {
    for (T v : ev) {
      size_t at = c.bytes.size();
      c.bytes.resize(at + sizeof(T));
      std::memcpy(c.bytes.data() + at, &v, sizeof(T));
    }
    c.offsets.push_back(c.offsets.back() + ev.size());
  }
  return c;
}

TEST(AgcAnalyze, EventLoopsFillCutflowsAndHistograms) {
  // Event 0: the 4j1b baseline; event 1: 4j2b; event 2: two leptons; event 3: 24.5 GeV 4th jet.
  std::vector<EventData> evs = {Baseline(), Baseline(), Baseline(), Baseline()};
  evs[1].jet_btag[2] = 0.95f;
  evs[2].AddMuon(30);
  evs[3].jet_pt[3] = 24.5f;
  using F = std::vector<std::vector<float>>;
  F el_pt, el_eta, el_sip, mu_pt, mu_eta, mu_sip, mu_iso, j_pt, j_eta, j_phi, j_m, j_b;
  std::vector<std::vector<int32_t>> el_id;
  std::vector<std::vector<uint8_t>> mu_id;
  for (const EventData& e : evs) {
    el_pt.push_back(e.el_pt), el_eta.push_back(e.el_eta), el_sip.push_back(e.el_sip3d);
    el_id.push_back(e.el_id);
    mu_pt.push_back(e.mu_pt), mu_eta.push_back(e.mu_eta), mu_sip.push_back(e.mu_sip3d);
    mu_iso.push_back(e.mu_iso), mu_id.push_back(e.mu_tight);
    j_pt.push_back(e.jet_pt), j_eta.push_back(e.jet_eta), j_phi.push_back(e.jet_phi);
    j_m.push_back(e.jet_mass), j_b.push_back(e.jet_btag);
  }
  using rootio::LeafType;
  std::vector<rootio::Column> cols = {
      Jagged(LeafType::kFloat32, el_pt),  Jagged(LeafType::kFloat32, el_eta),
      Jagged(LeafType::kInt32, el_id),    Jagged(LeafType::kFloat32, el_sip),
      Jagged(LeafType::kFloat32, mu_pt),  Jagged(LeafType::kFloat32, mu_eta),
      Jagged(LeafType::kBool, mu_id),     Jagged(LeafType::kFloat32, mu_sip),
      Jagged(LeafType::kFloat32, mu_iso), Jagged(LeafType::kFloat32, j_pt),
      Jagged(LeafType::kFloat32, j_eta),  Jagged(LeafType::kFloat32, j_phi),
      Jagged(LeafType::kFloat32, j_m),    Jagged(LeafType::kFloat32, j_b),
  };
  AgcColumnMap map{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  AgcScratch scratch;
  AgcResult r;
  ASSERT_TRUE(AnalyzeUnit(map, cols, &scratch, &r).has_value());

  const Cutflow& nom = r.cutflow(Variation::kNominal);
  EXPECT_EQ(nom.events, 4u);
  EXPECT_EQ(nom.one_lepton, 3u);
  EXPECT_EQ(nom.four_jets, 2u);
  EXPECT_EQ(nom.one_btag, 2u);
  EXPECT_EQ(nom.region_4j1b, 1u);
  EXPECT_EQ(nom.region_4j2b, 1u);
  const Cutflow& up = r.cutflow(Variation::kJesUp);
  EXPECT_EQ(up.region_4j1b, 2u);  // event 3 joins
  EXPECT_EQ(r.cutflow(Variation::kJesDown), nom);
  EXPECT_EQ(r.histogram(Variation::kNominal, Observable::kHt4j1b).entries(), 1u);
  EXPECT_DOUBLE_EQ(r.histogram(Variation::kNominal, Observable::kHt4j1b).Mean(), 280);
  EXPECT_EQ(r.histogram(Variation::kNominal, Observable::kMbjj4j2b).entries(), 1u);
  EXPECT_EQ(r.histogram(Variation::kJesUp, Observable::kLeptonPt).entries(), 3u);
  EXPECT_EQ(r.histograms().size(), 9u);
  EXPECT_EQ(r.histograms()[0].name(), "ht_4j1b_nominal");
  EXPECT_EQ(r.histograms()[8].name(), "lepton_pt_jes_down");

  // Converting a column with another integer type gives the same result (e.g. UChar_t ids).
  std::vector<std::vector<uint8_t>> el_id8;
  for (const auto& v : el_id) {
    el_id8.emplace_back(v.begin(), v.end());
  }
  cols[2] = Jagged(LeafType::kUInt8, el_id8);
  AgcResult r8;
  ASSERT_TRUE(AnalyzeUnit(map, cols, &scratch, &r8).has_value());
  EXPECT_EQ(r8.Digest(), r.Digest());

  // Digest of a merge equals the digest of one pass over both halves.
  AgcResult twice = r;
  twice.Merge(r);
  AgcResult again;
  ASSERT_TRUE(AnalyzeUnit(map, cols, &scratch, &again).has_value());
  ASSERT_TRUE(AnalyzeUnit(map, cols, &scratch, &again).has_value());
  EXPECT_EQ(twice.Digest(), again.Digest());
  EXPECT_NE(twice.Digest(), r.Digest());

  // A scalar column where a jagged one is expected is corruption, not a crash.
  cols[9].jagged = false;
  AgcResult bad;
  EXPECT_FALSE(AnalyzeUnit(map, cols, &scratch, &bad).has_value());
}

}  // namespace
}  // namespace ferry::analysis
