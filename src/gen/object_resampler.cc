#include "gen/object_resampler.h"

#include <algorithm>
#include <cstring>

#include "gen/column_fill.h"

namespace ferry::gen {

using rootio::Column;
using rootio::LeafType;

namespace {

// Index values at or past the target's size in their entry become -1.
template <class T>
void ClampEntries(Column* out, std::span<const uint64_t> target_offsets) {
  uint8_t* p = out->bytes.data();
  for (size_t e = 0; e + 1 < out->offsets.size(); ++e) {
    const auto size = static_cast<int64_t>(target_offsets[e + 1] - target_offsets[e]);
    for (uint64_t k = out->offsets[e]; k < out->offsets[e + 1]; ++k) {
      T v;
      std::memcpy(&v, p + k * sizeof(T), sizeof(T));
      if (static_cast<int64_t>(v) >= size) {
        v = T(-1);
        std::memcpy(p + k * sizeof(T), &v, sizeof(T));
      }
    }
  }
}

}  // namespace

ObjectResampler::ObjectResampler(const EventTemplate& tmpl, uint64_t seed)
    : tmpl_(&tmpl),
      model_(BuildObjectModel(tmpl)),
      rng_(Mix64(seed ^ 0x4F424A4543545321ull)),
      group_picks_(model_.groups.size()),
      drawn_(model_.collections.size()) {}

void ObjectResampler::NextBatch(int64_t n, EventIdSequence& ids, std::vector<Column>* columns) {
  const auto count = static_cast<size_t>(n);
  const auto entries = static_cast<uint64_t>(tmpl_->entries);
  donors_.resize(count);
  ids_.resize(count);
  for (size_t e = 0; e < count; ++e) {
    donors_[e] = static_cast<uint32_t>(rng_.Below(entries));
    ids_[e] = ids.Next();
  }
  for (size_t g = 0; g < model_.groups.size(); ++g) {
    if (model_.groups[g].with_donor) {
      continue;  // FillBranch reads donors_
    }
    std::vector<uint32_t>& picks = group_picks_[g];
    picks.resize(count);
    for (size_t e = 0; e < count; ++e) {
      picks[e] = static_cast<uint32_t>(rng_.Below(entries));
    }
  }
  // New noise per batch, from the stream, so batches differ.
  noise_rng_ = Rng(rng_.Next());
  noise_.clear();
  noise_base_ = noise_rng_.Next();
  for (size_t c = 0; c < model_.collections.size(); ++c) {
    DrawObjects(c);
  }
  for (size_t c = 0; c < model_.collections.size(); ++c) {
    if (model_.collections[c].sort_key >= 0) {
      SortByKey(c);
    }
  }
  columns->resize(tmpl_->branches.size());
  for (size_t b = 0; b < tmpl_->branches.size(); ++b) {
    FillBranch(b, &(*columns)[b]);
  }
}

void ObjectResampler::DrawObjects(size_t c) {
  const CollectionModel& cm = model_.collections[c];
  Drawn& d = drawn_[c];
  d.offsets.resize(donors_.size() + 1);
  d.offsets[0] = 0;
  for (size_t e = 0; e < donors_.size(); ++e) {
    d.offsets[e + 1] = d.offsets[e] + cm.counts[donors_[e]];
  }
  if (cm.whole) {
    return;
  }
  // Each object from the pool of the template's objects in events of its event's
  // multiplicity class, independently.
  d.objects.resize(d.offsets.back());
  for (size_t e = 0; e < donors_.size(); ++e) {
    const uint32_t n = cm.counts[donors_[e]];
    const std::vector<uint32_t>& pool = cm.class_objects[cm.class_of[n]];
    for (uint64_t k = d.offsets[e]; k < d.offsets[e + 1]; ++k) {
      d.objects[k] = pool[rng_.Below(pool.size())];
    }
  }
}

void ObjectResampler::SortByKey(size_t c) {
  const CollectionModel& cm = model_.collections[c];
  const auto key = static_cast<size_t>(cm.sort_key);
  Drawn& d = drawn_[c];
  // The key's new values first (resampled as FillBranch would), then each event's objects in
  // decreasing key order; the key column is then written from sort_values.
  const FloatKernel& k = model_.kernels[key];
  const bool kernel = k.shape != FloatKernel::Shape::kCopy;
  const size_t n = d.objects.size();
  d.sort_values.resize(n);
  d.sort_widths.resize(n);
  GatherFixed(reinterpret_cast<uint8_t*>(d.sort_values.data()),
              (kernel ? model_.centres[key] : tmpl_->branches[key].values).bytes.data(), d.objects,
              4);
  if (kernel) {
    GatherFixed(reinterpret_cast<uint8_t*>(d.sort_widths.data()), model_.widths[key].bytes.data(),
                d.objects, 4);
    ApplyKernel(k, d.sort_values.data(), d.sort_widths.data(), NoiseFor(key, n), n);
  }
  for (size_t e = 0; e + 1 < d.offsets.size(); ++e) {
    const size_t lo = d.offsets[e], hi = d.offsets[e + 1];
    if (hi - lo < 2) {
      continue;
    }
    sort_scratch_.clear();
    for (size_t i = lo; i < hi; ++i) {
      sort_scratch_.emplace_back(d.sort_values[i], d.objects[i]);
    }
    // Insertion sort: a handful of objects per event, and stable, so ties keep their draw order.
    for (size_t i = 1; i < sort_scratch_.size(); ++i) {
      const std::pair<float, uint32_t> x = sort_scratch_[i];
      size_t j = i;
      for (; j > 0 && sort_scratch_[j - 1].first < x.first; --j) {
        sort_scratch_[j] = sort_scratch_[j - 1];
      }
      sort_scratch_[j] = x;
    }
    for (size_t i = lo; i < hi; ++i) {
      d.sort_values[i] = sort_scratch_[i - lo].first;
      d.objects[i] = sort_scratch_[i - lo].second;
    }
  }
}

const uint32_t* ObjectResampler::NoiseFor(size_t b, size_t count) {
  // Branches read the batch's noise words from different starts: drawing a stream per branch
  // cost more than the kernel itself. Starts differ by an odd stride (never equal for two
  // branches), so a word two branches share perturbs different objects.
  constexpr uint64_t kSpan = uint64_t{1} << 16;
  constexpr uint64_t kStride = 40503;
  const size_t start = (noise_base_ + b * kStride) & (kSpan - 1);
  if (noise_.size() < start + count) {
    size_t k = noise_.size();  // even: words are drawn in pairs
    noise_.resize((start + count + 1) & ~size_t{1});
    for (; k < noise_.size(); k += 2) {
      const uint64_t w = noise_rng_.Next();
      noise_[k] = static_cast<uint32_t>(w >> 32);
      noise_[k + 1] = static_cast<uint32_t>(w);
    }
  }
  return noise_.data() + start;
}

void ObjectResampler::FillBranch(size_t b, Column* out) {
  const TemplateBranch& tb = tmpl_->branches[b];
  const auto bi = static_cast<int32_t>(b);
  const auto n = static_cast<int64_t>(donors_.size());
  StartColumn(tb.spec, n, out);
  if (bi == tmpl_->run || bi == tmpl_->lumi || bi == tmpl_->event) {
    FillIdColumn(*tmpl_, bi, ids_, out);
    return;
  }
  const int32_t c = model_.collection_of[b];
  if (c >= 0 && model_.collections[static_cast<size_t>(c)].sort_key == bi) {
    const Drawn& d = drawn_[static_cast<size_t>(c)];
    out->offsets.assign(d.offsets.begin(), d.offsets.end());
    out->bytes.resize(d.sort_values.size() * 4);
    if (!d.sort_values.empty()) {
      std::memcpy(out->bytes.data(), d.sort_values.data(), out->bytes.size());
    }
    return;  // resampled by SortByKey
  }
  const FloatKernel& k = model_.kernels[b];
  if (k.shape == FloatKernel::Shape::kCopy) {
    Gather(b, tb.values, out);
  } else {
    // The kernel's centres and widths of the drawn values, then the draw around them.
    Gather(b, model_.centres[b], out);
    GatherWidths(b, *out);
    const size_t count = out->bytes.size() / rootio::LeafTypeSize(out->type);
    const uint32_t* noise = nullptr;
    if (c >= 0 && model_.collections[static_cast<size_t>(c)].whole) {
      // One noise word per event, for every value of the event: the collection moves as one
      // (a common pt scale, eta shift, phi rotation, weight factor; FitKernel's coherent).
      const uint32_t* words = NoiseFor(b, static_cast<size_t>(n));
      coherent_.resize(count);
      for (size_t e = 0; e + 1 < out->offsets.size(); ++e) {
        std::fill(coherent_.begin() + static_cast<ptrdiff_t>(out->offsets[e]),
                  coherent_.begin() + static_cast<ptrdiff_t>(out->offsets[e + 1]), words[e]);
      }
      noise = coherent_.data();
    } else {
      noise = NoiseFor(b, count);
    }
    const float* w = widths_.data();
    if (out->type == LeafType::kFloat32) {
      ApplyKernel(k, reinterpret_cast<float*>(out->bytes.data()), w, noise, count);
    } else {
      ApplyKernel(k, reinterpret_cast<double*>(out->bytes.data()), w, noise, count);
    }
  }
  if (model_.index_target[b] >= 0) {
    ClampIndices(b, out);
  }
}

void ObjectResampler::Gather(size_t b, const Column& src, Column* out) const {
  const TemplateBranch& tb = tmpl_->branches[b];
  const size_t vs = rootio::LeafTypeSize(src.type);
  const int32_t c = model_.collection_of[b];
  if (c < 0 || model_.collections[static_cast<size_t>(c)].counter == static_cast<int32_t>(b)) {
    // Counters (the donor's) and event-level branches (their group's template event).
    const std::vector<uint32_t>& picks =
        c >= 0 || model_.groups[static_cast<size_t>(model_.group_of[b])].with_donor
            ? donors_
            : group_picks_[static_cast<size_t>(model_.group_of[b])];
    if (out->jagged) {  // strings
      GatherRanges(src, picks, tb.spec.type == LeafType::kString ? 1 : vs, out);
    } else {
      const size_t es = out->fixed_len * vs;
      out->bytes.resize(picks.size() * es);
      GatherFixed(out->bytes.data(), src.bytes.data(), picks, es);
    }
    return;
  }
  const CollectionModel& cm = model_.collections[static_cast<size_t>(c)];
  if (cm.whole) {
    GatherRanges(src, donors_, vs, out);
    return;
  }
  const Drawn& d = drawn_[static_cast<size_t>(c)];
  const auto len = static_cast<uint64_t>(tb.spec.len);
  if (len == 1) {
    out->offsets.assign(d.offsets.begin(), d.offsets.end());
  } else {
    std::vector<uint64_t>& offsets = out->offsets.Mutable();
    offsets.resize(d.offsets.size());
    for (size_t e = 0; e < d.offsets.size(); ++e) {
      offsets[e] = d.offsets[e] * len;
    }
  }
  out->bytes.resize(d.objects.size() * len * vs);
  GatherFixed(out->bytes.data(), src.bytes.data(), d.objects, len * vs);
}

void ObjectResampler::GatherWidths(size_t b, const Column& values) {
  // As Gather, into a plain array: the values' column already has the offsets.
  const Column& src = model_.widths[b];
  const size_t count = values.bytes.size() / rootio::LeafTypeSize(values.type);
  widths_.resize(count + kGatherSlack / 4);
  auto* dst = reinterpret_cast<uint8_t*>(widths_.data());
  const int32_t c = model_.collection_of[b];
  if (c < 0) {
    const int32_t g = model_.group_of[b];
    const std::vector<uint32_t>& picks = model_.groups[static_cast<size_t>(g)].with_donor
                                             ? donors_
                                             : group_picks_[static_cast<size_t>(g)];
    GatherFixed(dst, src.bytes.data(), picks, size_t{4} * values.fixed_len);
  } else if (model_.collections[static_cast<size_t>(c)].whole) {
    for (size_t e = 0; e < donors_.size(); ++e) {
      const uint64_t at = src.offsets[donors_[e]];
      GatherCopy(dst + 4 * values.offsets[e], src.bytes.data(), 4 * at,
                 4 * (values.offsets[e + 1] - values.offsets[e]), src.bytes.size());
    }
  } else {
    GatherFixed(dst, src.bytes.data(), drawn_[static_cast<size_t>(c)].objects,
                4 * static_cast<size_t>(tmpl_->branches[b].spec.len));
  }
}

void ObjectResampler::ClampIndices(size_t b, Column* out) const {
  const std::vector<uint64_t>& target = drawn_[static_cast<size_t>(model_.index_target[b])].offsets;
  switch (out->type) {
    case LeafType::kInt8:
      ClampEntries<int8_t>(out, target);
      break;
    case LeafType::kInt16:
      ClampEntries<int16_t>(out, target);
      break;
    case LeafType::kInt32:
      ClampEntries<int32_t>(out, target);
      break;
    case LeafType::kInt64:
      ClampEntries<int64_t>(out, target);
      break;
    default:
      break;
  }
}

}  // namespace ferry::gen
