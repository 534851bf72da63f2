// EventIdSequence: run, luminosityBlock and event numbers with the structure of real CMS data,
// for the generator. Deterministic for a seed.
//
//   - runs: several per dataset, increasing with gaps (a run lasts 100 to 600 lumi blocks);
//   - lumi blocks: numbered from 1 in each run, 200 to 500 events each;
//   - event numbers: increasing within a run, sparse (gaps of 1 to 64), starting anywhere in
//     [1e6, 6e9] per run, so many exceed 32 bits.
//
// The event store addresses events by (run, lumi, event): the triples are unique and sorted.
// Not thread-safe; a value type.
#pragma once

#include <cstdint>

#include "gen/rng.h"

namespace ferry::gen {

struct EventId {
  uint32_t run = 0;
  uint32_t lumi = 0;
  uint64_t event = 0;
};

class EventIdSequence {
 public:
  explicit EventIdSequence(uint64_t seed);
  EventId Next();

 private:
  void StartRun();
  void StartLumi();

  Rng rng_;
  EventId id_;
  int64_t lumis_left_ = 0;
  int64_t events_left_ = 0;
};

}  // namespace ferry::gen
