#include "gen/event_ids.h"

namespace ferry::gen {

EventIdSequence::EventIdSequence(uint64_t seed) : rng_(Mix64(seed ^ 0x52554E4C554D4931ull)) {
  id_.run = static_cast<uint32_t>(rng_.Between(273000, 276000));
  StartRun();
}

void EventIdSequence::StartRun() {
  lumis_left_ = static_cast<int64_t>(rng_.Between(100, 600));
  id_.lumi = 0;
  id_.event = rng_.Between(1000000, 6000000000ull);
  StartLumi();
}

void EventIdSequence::StartLumi() {
  ++id_.lumi;
  --lumis_left_;
  events_left_ = static_cast<int64_t>(rng_.Between(200, 500));
}

EventId EventIdSequence::Next() {
  if (events_left_ == 0) {
    if (lumis_left_ == 0) {
      id_.run += static_cast<uint32_t>(rng_.Between(1, 30));
      StartRun();
    } else {
      StartLumi();
    }
  }
  --events_left_;
  id_.event += rng_.Between(1, 64);
  return id_;
}

}  // namespace ferry::gen
