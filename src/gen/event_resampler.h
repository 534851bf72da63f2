// EventResampler: the whole-event model (GenMode::kEvent, `ferry gen nanoaod --mode event`).
//
// Each new event is a whole template event picked at random (so jagged collections stay
// consistent with their counters), with every float and double value perturbed by a small
// relative amount (kRelativeNoise) and rounded back to the precision the template value has
// (NanoAOD stores most floats with 10-16 mantissa bits; keeping that precision keeps the
// compression ratio realistic). Integers, bools and strings are copied. run,
// luminosityBlock and event come from an EventIdSequence.
//
// Deterministic: the same template, seed and batch sizes give the same values. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "gen/event_ids.h"
#include "gen/event_template.h"
#include "gen/resampler.h"
#include "gen/rng.h"
#include "rootio/column.h"

namespace ferry::gen {

constexpr double kRelativeNoise = 0.02;

// v perturbed by noise in [-1, 1) * kRelativeNoise and rounded to v's mantissa precision.
// Zeros, infinities and NaNs are returned unchanged.
float PerturbFloat(float v, double noise);
double PerturbDouble(double v, double noise);

class EventResampler : public Resampler {
 public:
  EventResampler(const EventTemplate& tmpl, uint64_t seed);

  void NextBatch(int64_t n, EventIdSequence& ids, std::vector<rootio::Column>* columns) override;

 private:
  void FillBranch(size_t branch, rootio::Column* out);

  // Jagged branches whose template offsets are identical (same counter, same values per unit):
  // per batch, the template start of each picked entry and the new offsets.
  struct Group {
    size_t branch;  // the first branch of the group
    std::vector<uint64_t> starts;
    std::vector<uint64_t> offsets;
  };

  const EventTemplate* tmpl_;
  std::vector<int32_t> group_of_;  // per branch: its group, or -1 (fixed size, strings, ids)
  std::vector<Group> groups_;
  Rng rng_;
  uint64_t noise_key_;
  std::vector<uint32_t> picks_;
  std::vector<EventId> ids_;
  std::vector<uint32_t> noise_;  // per-value noise words of one float column
};

}  // namespace ferry::gen
