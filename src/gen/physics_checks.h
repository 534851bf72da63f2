// Physics checks of generated events (issue 18), shared by gen_physics_test.cc (in memory,
// every test run) and gen_physics_long_test.cc (make test-long, files on disk): the AGC ttbar
// analysis and the template's distributions against generated events. Test code only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analysis/agc.h"
#include "gen/event_template.h"
#include "gen/resampler.h"
#include "gen/template_fixture.h"
#include "rootio/column.h"

namespace ferry::gen {

// The branches whose distributions are compared with the template's: those the gen's AGC
// byte share counts and those the analysis cuts on.
inline constexpr size_t kNumCheckedBranches = 21;
extern const char* const kCheckedBranches[kNumCheckedBranches];

// Quantiles are taken over the first events of a run, at least this many.
inline constexpr int64_t kQuantileEvents = 200000;

struct PhysicsRun {
  analysis::AgcResult agc;
  // Events in 4j1b both nominally and with the JES variation (jets only: the lepton does not
  // move with the jet energy scale): the sum of their H_T ratios, and their number.
  double common_ratio_sum[2] = {0, 0};  // up, down
  uint64_t common[2] = {0, 0};
  // Per checked branch: every value of the first kQuantileEvents events (or a little more).
  std::vector<std::vector<double>> values{kNumCheckedBranches};
  int64_t events = 0;
};

using ColumnByName = std::function<const rootio::Column&(const char*)>;

// Adds a batch of events to run (all but the AGC histograms, which the analysis fills): the
// jets' part of the selection per event, nominal and with each JES variation, and while fewer
// than kQuantileEvents events were seen, the checked branches' values. col gives the batch's
// column of a branch (the checked ones and Jet_pt/eta/phi/mass/btagCSVV2).
void AddBatch(const ColumnByName& col, PhysicsRun* run);

// events generated in memory by r in batches (as GenerateNanoAod does), analysed.
PhysicsRun Generate(const EventTemplate& t, Resampler& r, int64_t events, uint64_t seed);

// Every check of issue 18 against the template t; the failures, empty when the events look
// like physics.
std::vector<std::string> PhysicsProblems(const EventTemplate& t, const PhysicsRun& run);

// The cut flows, the histograms' shapes and the quantiles, on stdout (for reports).
void Print(const EventTemplate& t, const PhysicsRun& run);

// The tests' fixture: the default template in tmpl_.
using GenPhysicsTest = TemplateTest;

}  // namespace ferry::gen
