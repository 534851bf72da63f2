// Resampler: makes new events from an EventTemplate, a column batch at a time. Two models:
//
//   GenMode::kObject (the default; object_resampler.h): every event is assembled from parts
//     drawn independently from the template — collection multiplicities, each object of a
//     collection, groups of event-level branches — with a smooth per-branch perturbation, so
//     that distributions are continuous and combinations the template never had appear;
//   GenMode::kEvent (event_resampler.h): every event is a whole template event with its floats
//     perturbed by up to 2% (the model of earlier ferry releases; its bytes are unchanged, for
//     continuity with datasets made by them).
//
// Both write one column per template branch in template order, with counters consistent with
// their collections and run / luminosityBlock / event from the caller's EventIdSequence.
// Deterministic: the same template, seed and batch sizes give the same values. Not
// thread-safe (BatchPipeline drives one from one thread at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "gen/event_ids.h"
#include "gen/event_template.h"
#include "rootio/column.h"

namespace ferry::gen {

enum class GenMode : uint8_t { kObject, kEvent };

std::string_view GenModeName(GenMode mode);  // "object", "event"
Result<GenMode> ParseGenMode(std::string_view name);

class Resampler {
 public:
  virtual ~Resampler() = default;
  // Replaces columns (one per template branch, resized as needed) with n new events.
  virtual void NextBatch(int64_t n, EventIdSequence& ids, std::vector<rootio::Column>* columns) = 0;
};

// The resampler of a mode over tmpl, which must outlive it.
std::unique_ptr<Resampler> MakeResampler(GenMode mode, const EventTemplate& tmpl, uint64_t seed);

}  // namespace ferry::gen
