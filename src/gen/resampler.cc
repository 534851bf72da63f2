#include "gen/resampler.h"

#include <bit>
#include <cstring>

namespace ferry::gen {

using rootio::Column;
using rootio::LeafType;

namespace {

// noise in [-1, 1) from 53 random bits.
double Noise(uint64_t r) {
  return static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0;
}

template <class F, class U, int kMantissa, U kExpMask>
F Perturb(F v, double noise) {
  const U bits = std::bit_cast<U>(v);
  if ((bits & kExpMask) == kExpMask || v == 0) {
    return v;
  }
  const U mant = bits & ((U{1} << kMantissa) - 1);
  const int unused = mant == 0 ? kMantissa : std::countr_zero(mant);
  const F w = static_cast<F>(static_cast<double>(v) * (1.0 + kRelativeNoise * noise));
  U wb = std::bit_cast<U>(w);
  if (unused > 0) {
    const U half = U{1} << (unused - 1);
    wb = (wb + half) & ~((U{1} << unused) - 1);
  }
  const F out = std::bit_cast<F>(wb);
  return (std::bit_cast<U>(out) & kExpMask) == kExpMask ? v : out;
}

}  // namespace

float PerturbFloat(float v, double noise) {
  return Perturb<float, uint32_t, 23, 0x7F800000u>(v, noise);
}

double PerturbDouble(double v, double noise) {
  return Perturb<double, uint64_t, 52, 0x7FF0000000000000ull>(v, noise);
}

Resampler::Resampler(const EventTemplate& tmpl, uint64_t seed)
    : tmpl_(&tmpl), rng_(Mix64(seed ^ 0x5245534D504C4552ull)), noise_key_(Mix64(seed + 1)) {}

void Resampler::FillBranch(size_t branch, Column* out) {
  const TemplateBranch& tb = tmpl_->branches[branch];
  const Column& src = tb.values;
  const auto n = static_cast<int64_t>(picks_.size());
  out->type = tb.spec.type;
  out->first_entry = 0;
  out->num_entries = n;
  out->jagged = !tb.spec.count.empty() || tb.spec.type == LeafType::kString;
  out->fixed_len = out->jagged ? 1 : static_cast<uint32_t>(tb.spec.len);
  out->offsets.clear();
  out->bytes.clear();
  const size_t vs = rootio::LeafTypeSize(tb.spec.type);
  const int32_t bi = static_cast<int32_t>(branch);
  if (bi == tmpl_->run || bi == tmpl_->lumi || bi == tmpl_->event) {
    out->bytes.resize(static_cast<size_t>(n) * vs);
    for (size_t e = 0; e < picks_.size(); ++e) {
      const EventId& id = ids_[e];
      if (bi == tmpl_->event) {
        std::memcpy(out->bytes.data() + 8 * e, &id.event, 8);
      } else {
        uint32_t v = bi == tmpl_->run ? id.run : id.lumi;
        std::memcpy(out->bytes.data() + 4 * e, &v, 4);
      }
    }
    return;
  }
  if (!out->jagged) {
    const size_t es = out->fixed_len * vs;
    out->bytes.resize(static_cast<size_t>(n) * es);
    uint8_t* dst = out->bytes.data();
    for (size_t e = 0; e < picks_.size(); ++e) {
      std::memcpy(dst + e * es, src.bytes.data() + picks_[e] * es, es);
    }
  } else {
    const size_t unit = tb.spec.type == LeafType::kString ? 1 : vs;
    out->offsets.reserve(picks_.size() + 1);
    out->offsets.push_back(0);
    for (uint32_t p : picks_) {
      const uint64_t s = src.offsets[p];
      const uint64_t t = src.offsets[p + 1];
      out->bytes.insert(out->bytes.end(), src.bytes.begin() + static_cast<ptrdiff_t>(s * unit),
                        src.bytes.begin() + static_cast<ptrdiff_t>(t * unit));
      out->offsets.push_back(out->offsets.back() + (t - s));
    }
  }
  // Perturb floating-point values; the noise of value k is a pure function of (key, k).
  const uint64_t key = Mix64(noise_key_ ^ (static_cast<uint64_t>(branch) << 32));
  if (tb.spec.type == LeafType::kFloat32) {
    const size_t count = out->bytes.size() / 4;
    for (size_t k = 0; k < count; ++k) {
      float v;
      std::memcpy(&v, out->bytes.data() + 4 * k, 4);
      v = PerturbFloat(v, Noise(Mix64(key + k)));
      std::memcpy(out->bytes.data() + 4 * k, &v, 4);
    }
  } else if (tb.spec.type == LeafType::kFloat64) {
    const size_t count = out->bytes.size() / 8;
    for (size_t k = 0; k < count; ++k) {
      double v;
      std::memcpy(&v, out->bytes.data() + 8 * k, 8);
      v = PerturbDouble(v, Noise(Mix64(key + k)));
      std::memcpy(out->bytes.data() + 8 * k, &v, 8);
    }
  }
}

void Resampler::NextBatch(int64_t n, EventIdSequence& ids, std::vector<Column>* columns) {
  picks_.resize(static_cast<size_t>(n));
  ids_.resize(static_cast<size_t>(n));
  const auto entries = static_cast<uint64_t>(tmpl_->entries);
  for (size_t e = 0; e < picks_.size(); ++e) {
    picks_[e] = static_cast<uint32_t>(rng_.Below(entries));
    ids_[e] = ids.Next();
  }
  // A new noise key per batch, from the stream, so batches differ.
  noise_key_ = rng_.Next();
  columns->resize(tmpl_->branches.size());
  for (size_t b = 0; b < tmpl_->branches.size(); ++b) {
    FillBranch(b, &(*columns)[b]);
  }
}

}  // namespace ferry::gen
