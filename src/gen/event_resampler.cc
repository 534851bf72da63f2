#include "gen/event_resampler.h"

#include <bit>
#include <cstring>

#include "gen/column_fill.h"

namespace ferry::gen {

using rootio::Column;
using rootio::LeafType;

namespace {

// The perturbation on raw bits: noise in [-1, 1) scaled by kRelativeNoise, then rounded back to
// the number of mantissa bits the value had. Zeros, infinities and NaNs pass unchanged.
// Branch-free so that the loop over a column vectorises: the rounding step is the lowest set
// mantissa bit (mant & -mant, i.e. 1 << countr_zero(mant)), or 2^23 for a zero mantissa.
inline uint32_t PerturbBits32(uint32_t bits, float noise) {
  constexpr uint32_t kExp = 0x7F800000u;
  const uint32_t mant = bits & 0x7FFFFFu;
  const uint32_t step = (mant & (0u - mant)) | (static_cast<uint32_t>(mant == 0) << 23);
  const auto v = std::bit_cast<float>(bits);
  auto wb = std::bit_cast<uint32_t>(v + v * (static_cast<float>(kRelativeNoise) * noise));
  wb = (wb + (step >> 1)) & (0u - step);
  // Bitwise, not short-circuit, tests and an arithmetic select: no branch in the loop.
  const uint32_t keep = static_cast<uint32_t>((bits & kExp) == kExp)
                        | static_cast<uint32_t>((bits & 0x7FFFFFFFu) == 0)
                        | static_cast<uint32_t>((wb & kExp) == kExp);
  const uint32_t mask = 0u - keep;
  return (bits & mask) | (wb & ~mask);
}

uint64_t PerturbBits64(uint64_t bits, double noise) {
  constexpr uint64_t kExp = 0x7FF0000000000000ull;
  if ((bits & kExp) == kExp || (bits & ~(uint64_t{1} << 63)) == 0) {
    return bits;
  }
  const uint64_t mant = bits & ((uint64_t{1} << 52) - 1);
  const int unused = mant == 0 ? 52 : std::countr_zero(mant);
  const auto v = std::bit_cast<double>(bits);
  auto wb = std::bit_cast<uint64_t>(v + v * (kRelativeNoise * noise));
  const uint64_t step = uint64_t{1} << unused;
  wb = (wb + (step >> 1)) & ~(step - 1);
  return (wb & kExp) == kExp ? bits : wb;
}

// Noise in [-1, 1) from the top 32 bits of a random word.
float Noise32(uint64_t r) {
  return static_cast<float>(static_cast<int32_t>(r >> 32)) * 0x1.0p-31f;
}

// count floats at p perturbed, value i with noise[i] (as a signed fraction of 2^31). The loop
// has no serial dependency and vectorises: eight values a step with AVX2, four with SSE2.
inline void PerturbFloatsLoop(uint8_t* p, const uint32_t* noise, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    uint32_t b;
    std::memcpy(&b, p + 4 * i, 4);
    b = PerturbBits32(b, static_cast<float>(static_cast<int32_t>(noise[i])) * 0x1.0p-31f);
    std::memcpy(p + 4 * i, &b, 4);
  }
}

__attribute__((target("avx2"))) void PerturbFloatsAvx2(uint8_t* p,
                                                       const uint32_t* noise,
                                                       size_t count) {
  PerturbFloatsLoop(p, noise, count);
}

void PerturbFloatsBase(uint8_t* p, const uint32_t* noise, size_t count) {
  PerturbFloatsLoop(p, noise, count);
}

void PerturbFloats(uint8_t* p, const uint32_t* noise, size_t count) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    PerturbFloatsAvx2(p, noise, count);
  } else {
    PerturbFloatsBase(p, noise, count);
  }
}

}  // namespace

float PerturbFloat(float v, double noise) {
  return std::bit_cast<float>(PerturbBits32(std::bit_cast<uint32_t>(v), static_cast<float>(noise)));
}

double PerturbDouble(double v, double noise) {
  return std::bit_cast<double>(PerturbBits64(std::bit_cast<uint64_t>(v), noise));
}

EventResampler::EventResampler(const EventTemplate& tmpl, uint64_t seed)
    : tmpl_(&tmpl), rng_(Mix64(seed ^ 0x5245534D504C4552ull)), noise_key_(Mix64(seed + 1)) {
  // Jagged branches with the same counter and values per count unit have the same offsets in
  // every template entry (they come from the counter), so they share one group.
  group_of_.assign(tmpl.branches.size(), -1);
  for (size_t b = 0; b < tmpl.branches.size(); ++b) {
    const rootwrite::BranchSpec& spec = tmpl.branches[b].spec;
    if (spec.count.empty() || spec.type == LeafType::kString
        || tmpl.branches[b].values.offsets.size() != static_cast<size_t>(tmpl.entries) + 1) {
      continue;
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      const rootwrite::BranchSpec& other = tmpl.branches[groups_[g].branch].spec;
      if (other.count == spec.count && other.len == spec.len
          && tmpl.branches[groups_[g].branch].values.offsets == tmpl.branches[b].values.offsets) {
        group_of_[b] = static_cast<int32_t>(g);
        break;
      }
    }
    if (group_of_[b] < 0) {
      group_of_[b] = static_cast<int32_t>(groups_.size());
      groups_.push_back(Group{b, {}, {}});
    }
  }
}

void EventResampler::FillBranch(size_t branch, Column* out) {
  const TemplateBranch& tb = tmpl_->branches[branch];
  const Column& src = tb.values;
  const auto n = static_cast<int64_t>(picks_.size());
  StartColumn(tb.spec, n, out);
  const size_t vs = rootio::LeafTypeSize(tb.spec.type);
  const auto bi = static_cast<int32_t>(branch);
  if (bi == tmpl_->run || bi == tmpl_->lumi || bi == tmpl_->event) {
    FillIdColumn(*tmpl_, bi, ids_, out);
    return;
  }
  if (!out->jagged) {
    const size_t es = out->fixed_len * vs;
    out->bytes.resize(static_cast<size_t>(n) * es);
    GatherFixed(out->bytes.data(), src.bytes.data(), picks_, es);
  } else if (group_of_[branch] >= 0) {
    // Offsets shared by every branch of the count group, computed once per batch.
    const Group& g = groups_[static_cast<size_t>(group_of_[branch])];
    out->offsets.assign(g.offsets.begin(), g.offsets.end());
    const uint64_t total = g.offsets.back();
    // Capacity past the end lets GatherCopy move small entries as fixed 32-byte blocks.
    out->bytes.reserve(total * vs + kGatherSlack);
    out->bytes.resize(total * vs);
    uint8_t* dst = out->bytes.data();
    const uint8_t* from = src.bytes.data();
    const size_t src_bytes = src.bytes.size();
    for (size_t e = 0; e < picks_.size(); ++e) {
      const size_t len = (g.offsets[e + 1] - g.offsets[e]) * vs;
      GatherCopy(dst + g.offsets[e] * vs, from, g.starts[e] * vs, len, src_bytes);
    }
  } else {  // strings (and a jagged branch without a template offset table per entry)
    GatherRanges(src, picks_, tb.spec.type == LeafType::kString ? 1 : vs, out);
  }
  // Perturb floating-point values with a noise stream keyed by (batch, branch).
  if (tb.spec.type == LeafType::kFloat32 || tb.spec.type == LeafType::kFloat64) {
    Rng noise(noise_key_ ^ (static_cast<uint64_t>(branch) * 0x9E3779B97F4A7C15ull));
    uint8_t* p = out->bytes.data();
    if (tb.spec.type == LeafType::kFloat32) {
      const size_t count = out->bytes.size() / 4;
      FillNoiseWords(noise, count, &noise_);
      PerturbFloats(p, noise_.data(), count);
    } else {
      const size_t count = out->bytes.size() / 8;
      for (size_t k = 0; k < count; ++k) {
        uint64_t b;
        std::memcpy(&b, p + 8 * k, 8);
        b = PerturbBits64(b, static_cast<double>(Noise32(noise.Next())));
        std::memcpy(p + 8 * k, &b, 8);
      }
    }
  }
}

void EventResampler::NextBatch(int64_t n, EventIdSequence& ids, std::vector<Column>* columns) {
  picks_.resize(static_cast<size_t>(n));
  ids_.resize(static_cast<size_t>(n));
  const auto entries = static_cast<uint64_t>(tmpl_->entries);
  for (size_t e = 0; e < picks_.size(); ++e) {
    picks_[e] = static_cast<uint32_t>(rng_.Below(entries));
    ids_[e] = ids.Next();
  }
  // A new noise key per batch, from the stream, so batches differ.
  noise_key_ = rng_.Next();
  for (Group& g : groups_) {
    const std::vector<uint64_t>& so = tmpl_->branches[g.branch].values.offsets.vector();
    g.starts.resize(picks_.size());
    g.offsets.resize(picks_.size() + 1);
    uint64_t total = 0;
    g.offsets[0] = 0;
    for (size_t e = 0; e < picks_.size(); ++e) {
      g.starts[e] = so[picks_[e]];
      total += so[picks_[e] + 1] - so[picks_[e]];
      g.offsets[e + 1] = total;
    }
  }
  columns->resize(tmpl_->branches.size());
  for (size_t b = 0; b < tmpl_->branches.size(); ++b) {
    FillBranch(b, &(*columns)[b]);
  }
}

}  // namespace ferry::gen
