// ObjectResampler: the object model (GenMode::kObject, the default of `ferry gen nanoaod`).
//
// Each new event is assembled as ObjectModel describes: a donor template event gives the
// multiplicities, the whole collections and the generator-level branches; every object of an
// object collection is drawn from that collection's pool; each event-level group comes from a
// template event of its own. Floats are perturbed by their branch's FloatKernel; pt-ordered
// collections are sorted by the perturbed pt; index branches stay within their targets.
//
// Randomness per batch: the donors, the groups' picks and the objects come from the seeded
// stream in a fixed order, the noise words from a stream keyed by it, each branch reading
// them from its own start, so the values depend only on the seed and the batch sizes. Memory: the
// model (a few bytes per template value) and per-batch pick lists.
#pragma once

#include <cstdint>
#include <vector>

#include "gen/event_ids.h"
#include "gen/event_template.h"
#include "gen/object_model.h"
#include "gen/resampler.h"
#include "gen/rng.h"
#include "rootio/column.h"

namespace ferry::gen {

class ObjectResampler : public Resampler {
 public:
  // tmpl must outlive the resampler.
  ObjectResampler(const EventTemplate& tmpl, uint64_t seed);

  void NextBatch(int64_t n, EventIdSequence& ids, std::vector<rootio::Column>* columns) override;

  const ObjectModel& model() const { return model_; }

 private:
  // A collection's draw for the current batch.
  struct Drawn {
    std::vector<uint64_t> offsets;   // objects of new event e: [offsets[e], offsets[e + 1])
    std::vector<uint32_t> objects;   // pool index of each new object (object collections)
    std::vector<float> sort_values;  // the resampled sort key of each new object, final order
    std::vector<float> sort_widths;
  };

  void DrawObjects(size_t c);
  void SortByKey(size_t c);
  void FillBranch(size_t b, rootio::Column* out);
  // Gathers branch b's entries of the batch from src (its template values or kernel centres:
  // columns of the template's layout) into out, as the branch's role says.
  void Gather(size_t b, const rootio::Column& src, rootio::Column* out) const;
  // The kernel widths of branch b's values (gathered into values) into widths_.
  void GatherWidths(size_t b, const rootio::Column& values);
  void ClampIndices(size_t b, rootio::Column* out) const;
  // count noise words for branch b from the batch's noise; valid until the next call.
  const uint32_t* NoiseFor(size_t b, size_t count);

  const EventTemplate* tmpl_;
  ObjectModel model_;
  Rng rng_;
  Rng noise_rng_{0};              // the batch's noise words, drawn as far as branches need them
  uint64_t noise_base_ = 0;       // where branch 0 starts reading them
  std::vector<uint32_t> donors_;  // per new event
  std::vector<std::vector<uint32_t>> group_picks_;  // per group, per new event
  std::vector<Drawn> drawn_;                        // per collection
  std::vector<EventId> ids_;
  std::vector<uint32_t> noise_;     // the batch's noise words drawn so far
  std::vector<uint32_t> coherent_;  // a whole collection's words, one per event, per value
  std::vector<float> widths_;       // the kernel widths of the branch being filled
  std::vector<std::pair<float, uint32_t>> sort_scratch_;
};

}  // namespace ferry::gen
