// Physics checks of generated events (issue 18): the AGC ttbar analysis on events of the
// object model looks like physics, not like copies of the template's two selected events.
//
// Events are generated in memory (ObjectResampler batches, as `ferry gen` writes them) and
// analysed batch by batch with the AGC event loops; the long test writes the events to files
// with GenerateNanoAod and runs the real multi-threaded pass over them.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/agc.h"
#include "gen/event_resampler.h"
#include "gen/nanoaod_gen.h"
#include "gen/object_resampler.h"
#include "testing/testing.h"

namespace ferry::gen {
namespace {

using analysis::AgcResult;
using analysis::Histogram;
using analysis::Observable;
using analysis::Variation;

// The branches whose distributions are compared with the template's: those the gen's AGC
// byte share counts and those the analysis cuts on.
const char* const kCheckedBranches[] = {
    "nJet",           "Jet_pt",       "Jet_eta",          "Jet_phi",      "Jet_mass",
    "Jet_btagCSVV2",  "nElectron",    "Electron_pt",      "Electron_eta", "Electron_phi",
    "Electron_sip3d", "Electron_cutBased", "nMuon",       "Muon_pt",      "Muon_eta",
    "Muon_phi",       "Muon_sip3d",   "Muon_pfRelIso04_all", "Muon_tightId", "MET_pt",
    "MET_phi"};

struct PhysicsRun {
  AgcResult agc;
  // Events in 4j1b both nominally and with the JES variation (jets only: the lepton does not
  // move with the jet energy scale): the sum of their H_T ratios, and their number.
  double common_ratio_sum[2] = {0, 0};  // up, down
  uint64_t common[2] = {0, 0};
  // Per checked branch: every value of the first kQuantileEvents events.
  std::vector<std::vector<double>> values;
};

constexpr int64_t kQuantileEvents = 200000;

Result<analysis::AgcColumnMap> MapColumns(const EventTemplate& t) {
  analysis::AgcColumnMap m{};
  int* slots[] = {&m.el_pt,   &m.el_eta,      &m.el_cut_based, &m.el_sip3d, &m.mu_pt,
                  &m.mu_eta,  &m.mu_tight_id, &m.mu_sip3d,     &m.mu_iso,   &m.jet_pt,
                  &m.jet_eta, &m.jet_phi,     &m.jet_mass,     &m.jet_btag};
  std::span<const std::string> leaves = analysis::AgcLeaves();
  for (size_t i = 0; i < leaves.size(); ++i) {
    *slots[i] = t.Find(leaves[i]);
    if (*slots[i] < 0) {
      return NotFoundError("template lacks " + leaves[i]);
    }
  }
  return m;
}

void AddValues(const rootio::Column& c, std::vector<double>* out) {
  for (size_t k = 0; k < c.num_values(); ++k) {
    out->push_back(c.AsDouble(k));
  }
}

// The jets' part of the selection, per event, nominal and with each JES variation.
void AddCommonEvents(const EventTemplate& t, std::span<const rootio::Column> cols, PhysicsRun* run) {
  auto col = [&](const char* name) -> const rootio::Column& {
    return cols[static_cast<size_t>(t.Find(name))];
  };
  const rootio::Column& pt = col("Jet_pt");
  const rootio::Column& eta = col("Jet_eta");
  const rootio::Column& phi = col("Jet_phi");
  const rootio::Column& mass = col("Jet_mass");
  const rootio::Column& btag = col("Jet_btagCSVV2");
  for (int64_t e = 0; e < pt.num_entries; ++e) {
    auto [lo, hi] = pt.EntryValues(e);
    auto span = [&](const rootio::Column& c) {
      return c.values<float>().subspan(lo, hi - lo);
    };
    const analysis::Jets jets{span(pt), span(eta), span(phi), span(mass), span(btag)};
    analysis::Selection s[3];
    const double scales[3] = {1.0, 1.03, 0.97};
    for (int v = 0; v < 3; ++v) {
      s[v].leptons = 1;
      analysis::SelectJets(jets, scales[v], {}, &s[v]);
    }
    for (int v = 1; v < 3; ++v) {
      if (s[0].region == analysis::Region::k4j1b && s[v].region == analysis::Region::k4j1b) {
        run->common_ratio_sum[v - 1] += s[v].ht / s[0].ht;
        ++run->common[v - 1];
      }
    }
  }
}

PhysicsRun Generate(const EventTemplate& t, Resampler& r, int64_t events, uint64_t seed) {
  PhysicsRun run;
  auto map = MapColumns(t);
  EXPECT_TRUE(map.has_value());
  run.values.resize(std::size(kCheckedBranches));
  EventIdSequence ids(seed);
  std::vector<rootio::Column> cols;
  analysis::AgcScratch scratch;
  constexpr int64_t kBatch = 2000;
  for (int64_t done = 0; done < events; done += kBatch) {
    r.NextBatch(std::min(kBatch, events - done), ids, &cols);
    EXPECT_TRUE(analysis::AnalyzeUnit(*map, cols, &scratch, &run.agc).has_value());
    AddCommonEvents(t, cols, &run);
    if (done < kQuantileEvents) {
      for (size_t i = 0; i < std::size(kCheckedBranches); ++i) {
        AddValues(cols[static_cast<size_t>(t.Find(kCheckedBranches[i]))], &run.values[i]);
      }
    }
  }
  return run;
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

// The shape checks of one histogram: at least 15 of 25 bins filled, none with over 20% of
// the entries. Returns a description of the failure, or "".
std::string ShapeProblem(const Histogram& h) {
  int filled = 0;
  double biggest = 0;
  for (int i = 1; i <= h.bins(); ++i) {
    const double c = h.contents()[static_cast<size_t>(i)];
    filled += c > 0 ? 1 : 0;
    biggest = std::max(biggest, c);
  }
  const auto entries = static_cast<double>(h.entries());
  if (filled < 15 || entries == 0 || biggest > 0.2 * entries) {
    return h.name() + ": " + std::to_string(filled) + " bins filled, largest bin "
           + std::to_string(entries > 0 ? biggest / entries : 0) + " of "
           + std::to_string(h.entries()) + " entries";
  }
  return "";
}

// Every check of the issue; returns the failures (empty when the events look like physics).
std::vector<std::string> PhysicsProblems(const EventTemplate& t, const PhysicsRun& run) {
  std::vector<std::string> problems;
  for (const Histogram& h : run.agc.histograms()) {
    if (std::string p = ShapeProblem(h); !p.empty()) {
      problems.push_back(p);
    }
  }
  // The jet energy scale: the H_T of events selected both nominally and with a variation
  // moves by the 3% of every jet (a little more upwards, where a fifth jet crosses 25 GeV);
  // the mean over each selection moves less, since events whose softest jet crosses the
  // threshold enter or leave with lower H_T than the average (the template's soft jet
  // spectrum makes that ~10% of the events), but it moves the right way.
  const double ht = run.agc.histogram(Variation::kNominal, Observable::kHt4j1b).Mean();
  const double up = run.agc.histogram(Variation::kJesUp, Observable::kHt4j1b).Mean() / ht - 1;
  const double down = run.agc.histogram(Variation::kJesDown, Observable::kHt4j1b).Mean() / ht - 1;
  const double common_up = run.common_ratio_sum[0] / static_cast<double>(run.common[0]) - 1;
  const double common_down = run.common_ratio_sum[1] / static_cast<double>(run.common[1]) - 1;
  std::printf("JES H_T mean: %+.4f / %+.4f; events in both selections: %+.4f / %+.4f\n", up, down,
              common_up, common_down);
  if (!(up > 0 && down < 0 && common_up >= 0.03 && common_up < 0.045 && common_down <= -0.03
        && common_down > -0.045)) {
    problems.push_back("JES H_T shifts " + std::to_string(up) + " / " + std::to_string(down)
                       + ", in events selected both ways " + std::to_string(common_up) + " / "
                       + std::to_string(common_down));
  }
  for (size_t i = 0; i < std::size(kCheckedBranches); ++i) {
    std::vector<double> pool;
    AddValues(t.branches[static_cast<size_t>(t.Find(kCheckedBranches[i]))].values, &pool);
    const double span = Quantile(pool, 0.9) - Quantile(pool, 0.1);
    for (double q : {0.1, 0.5, 0.9}) {
      const double resolution = std::sqrt(q * (1 - q) / static_cast<double>(pool.size()));
      const double want = Quantile(pool, q);
      const double got = Quantile(run.values[i], q);
      // Within 10% of the template's quantile; for quantiles near zero (eta, phi: signed
      // values) 10% of the 10-90% span stands in for the value. Where the pool is too sparse
      // to know its quantile that well (a tail of a few dozen values, e.g. Electron_sip3d
      // jumps from 30 to 56 at its 90%), anything between the pool's quantiles one standard
      // error of q away, sqrt(q (1 - q) / n), is as good.
      const bool close = std::fabs(got - want) <= 0.1 * std::max(std::fabs(want), 0.1 * span);
      const bool within_error = got >= Quantile(pool, q - resolution)
                                && got <= Quantile(pool, q + resolution);
      if (!close && !within_error) {
        problems.push_back(std::string(kCheckedBranches[i]) + " q" + std::to_string(q) + ": "
                           + std::to_string(got) + " vs template " + std::to_string(want));
      }
    }
  }
  return problems;
}

void Print(const PhysicsRun& run) {
  for (Variation v : analysis::kVariations) {
    const analysis::Cutflow& c = run.agc.cutflow(v);
    std::printf("%-9s 1 lepton %6llu  4 jets %6llu  1 btag %6llu  4j1b %6llu  4j2b %6llu\n",
                std::string(analysis::VariationName(v)).c_str(),
                static_cast<unsigned long long>(c.one_lepton),
                static_cast<unsigned long long>(c.four_jets),
                static_cast<unsigned long long>(c.one_btag),
                static_cast<unsigned long long>(c.region_4j1b),
                static_cast<unsigned long long>(c.region_4j2b));
  }
  for (const Histogram& h : run.agc.histograms()) {
    int filled = 0;
    double biggest = 0;
    for (int i = 1; i <= h.bins(); ++i) {
      filled += h.contents()[static_cast<size_t>(i)] > 0 ? 1 : 0;
      biggest = std::max(biggest, h.contents()[static_cast<size_t>(i)]);
    }
    std::printf("%-20s entries %6llu mean %8.2f filled %2d largest bin %.3f\n", h.name().c_str(),
                static_cast<unsigned long long>(h.entries()), h.Mean(), filled,
                h.entries() > 0 ? biggest / static_cast<double>(h.entries()) : 0.0);
  }
}

class GenPhysics : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::RootDataDir().empty()) {
      GTEST_SKIP() << "../shared/data/root not present";
    }
    auto t = LoadTemplate(testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root"));
    ASSERT_TRUE(t.has_value()) << t.error().ToString();
    tmpl_ = std::move(*t);
  }
  EventTemplate tmpl_;
};

TEST_F(GenPhysics, ObjectModelPassesEveryCheckOnOneMillionEvents) {
  ObjectResampler r(tmpl_, 1);
  const PhysicsRun run = Generate(tmpl_, r, 1000000, 1);
  Print(run);
  for (const std::string& p : PhysicsProblems(tmpl_, run)) {
    ADD_FAILURE() << p;
  }
}

TEST_F(GenPhysics, WholeEventModelFailsThem) {
  // The model of issue 18: the template's two selected events, perturbed, and nothing in 4j2b.
  EventResampler r(tmpl_, 1);
  const PhysicsRun run = Generate(tmpl_, r, 100000, 1);
  EXPECT_EQ(run.agc.cutflow(Variation::kNominal).region_4j2b, 0u);
  EXPECT_FALSE(PhysicsProblems(tmpl_, run).empty());
}

}  // namespace
}  // namespace ferry::gen
