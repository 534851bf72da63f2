#include "gen/resampler.h"

#include <string>

#include "gen/event_resampler.h"
#include "gen/object_resampler.h"

namespace ferry::gen {

std::string_view GenModeName(GenMode mode) {
  return mode == GenMode::kEvent ? "event" : "object";
}

Result<GenMode> ParseGenMode(std::string_view name) {
  if (name == "object") {
    return GenMode::kObject;
  }
  if (name == "event") {
    return GenMode::kEvent;
  }
  return InvalidArgumentError("unknown mode '" + std::string(name) + "' (object or event)");
}

std::unique_ptr<Resampler> MakeResampler(GenMode mode, const EventTemplate& tmpl, uint64_t seed) {
  if (mode == GenMode::kEvent) {
    return std::make_unique<EventResampler>(tmpl, seed);
  }
  return std::make_unique<ObjectResampler>(tmpl, seed);
}

}  // namespace ferry::gen
