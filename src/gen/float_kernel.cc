#include "gen/float_kernel.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ferry::gen {
namespace {

// Multiplies Silverman's width (before the adaptive factor and the pull to the mean).
constexpr double kBandwidth = 1.0;
// Log-space widths above this (sparse tails of pools spanning decades) would move values by
// factors of ten.
constexpr double kMaxLogWidth = 0.7;
// Same-sign quantities within [0, 1] spanning fewer than this factor are resampled linearly.
constexpr double kDecades = 100.0;
// Abramson's factor stays within these bounds.
constexpr double kMinAdaptive = 0.3, kMaxAdaptive = 4.0;
// A branch is discrete (copied) with at most this many distinct values...
constexpr size_t kDiscreteValues = 32;
// ... each seen this many times on average.
constexpr size_t kDiscreteRepeats = 4;
// Bins of the pilot density.
constexpr size_t kPilotBins = 200;
// The noise sum of four uniform bytes has mean 510 and standard deviation
// sqrt(4 * (256^2 - 1) / 12).
constexpr float kNoiseUnit = static_cast<float>(1.0 / 147.80054127);
constexpr float kPi = 3.14159265f;
constexpr float kTwoPi = 6.28318531f;

// Significant mantissa bits of v's float (or double) representation: 0 for powers of two.
int MantissaBits(double v, bool double_precision) {
  if (double_precision) {
    const uint64_t m = std::bit_cast<uint64_t>(v) & ((uint64_t{1} << 52) - 1);
    return m == 0 ? 0 : 52 - std::countr_zero(m);
  }
  const uint32_t m = std::bit_cast<uint32_t>(static_cast<float>(v)) & 0x7FFFFFu;
  return m == 0 ? 0 : 23 - std::countr_zero(m);
}

// Quantile q of sorted values, linear between neighbours.
double Quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto i = static_cast<size_t>(pos);
  if (i + 1 >= sorted.size()) {
    return sorted.back();
  }
  return sorted[i] + (pos - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]);
}

// Rounds to 12 significant bits: a last-bit difference of log() or exp() between C libraries
// should not change the output bytes.
double Coarse(double v) {
  int e = 0;
  const double m = std::frexp(v, &e);
  return std::ldexp(std::nearbyint(m * 4096.0) / 4096.0, e);
}

// v rounded (to nearest) to the branch's type and to bits significant mantissa bits, as the
// resampled values are. Centres come from exp() and log(), which C libraries may round
// differently in the last bit of a double; at the branch's precision that difference almost
// never shows, so the output bytes do not depend on the library.
double ToPrecision(double v, int bits, bool double_precision) {
  if (double_precision) {
    const int drop = 52 - std::clamp(bits, 0, 52);
    const uint64_t half = drop == 0 ? 0 : uint64_t{1} << (drop - 1);
    const uint64_t mask = drop == 0 ? ~uint64_t{0} : ~((uint64_t{1} << drop) - 1);
    return std::bit_cast<double>((std::bit_cast<uint64_t>(v) + half) & mask);
  }
  const int drop = 23 - std::clamp(bits, 0, 23);
  const uint32_t half = drop == 0 ? 0 : 1u << (drop - 1);
  const uint32_t mask = drop == 0 ? ~0u : ~((1u << drop) - 1);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(static_cast<float>(v)) + half) & mask);
}

// Abramson's adaptive factors (f(x_i) / g)^(-1/2) for the values x, where f is a Gaussian
// kernel density of width h over x (binned: kPilotBins bins, linear between bin centres) and
// g the geometric mean of the f(x_i).
std::vector<double> AdaptiveFactors(const std::vector<double>& x, double h) {
  const auto [mn, mx] = std::minmax_element(x.begin(), x.end());
  const double lo = *mn - 3 * h, hi = *mx + 3 * h;
  const double step = (hi - lo) / kPilotBins;
  std::vector<double> counts(kPilotBins, 0.0), density(kPilotBins, 0.0), kernel(kPilotBins);
  for (double v : x) {
    counts[std::min(kPilotBins - 1, static_cast<size_t>((v - lo) / step))] += 1;
  }
  for (size_t d = 0; d < kPilotBins; ++d) {
    const double u = static_cast<double>(d) * step / h;
    kernel[d] = std::exp(-0.5 * u * u);
  }
  for (size_t b = 0; b < kPilotBins; ++b) {
    for (size_t c = 0; c < kPilotBins; ++c) {
      density[b] += counts[c] * kernel[b > c ? b - c : c - b];
    }
  }
  std::vector<double> f(x.size());
  double log_sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double pos = std::clamp((x[i] - lo) / step - 0.5, 0.0, kPilotBins - 1.0);
    const auto b = std::min(kPilotBins - 2, static_cast<size_t>(pos));
    const double t = pos - static_cast<double>(b);
    f[i] = std::max(density[b] + t * (density[b + 1] - density[b]), 1e-300);
    log_sum += std::log(f[i]);
  }
  const double g = std::exp(log_sum / static_cast<double>(x.size()));
  for (double& v : f) {
    v = std::clamp(std::sqrt(g / v), kMinAdaptive, kMaxAdaptive);
  }
  return f;
}

// e^d for the kernel's |d| < ~2.5: (Taylor series of e^(d/8) to the 4th order)^8, relative
// error below 2e-4. Plain arithmetic, so that the vectorised loop gives the same bits
// everywhere; exactly 1 for d = 0.
template <class T>
inline T ExpApprox(T d) {
  const T x = d * T(0.125);
  T p = T(1) + x * (T(1) + x * (T(0.5) + x * (T(1.0 / 6.0) + x * T(1.0 / 24.0))));
  p = p * p;
  p = p * p;
  return p * p;
}

// The per-call constants of the float loop.
struct FloatParams {
  float lo, hi, lo2;
  float top, top2;  // kScale's upper reflection: at magnitudes up to 1, else none (infinity)
  uint32_t mask, half;
};

FloatParams MakeFloatParams(const FloatKernel& k) {
  FloatParams p{};
  p.lo = static_cast<float>(k.lo);
  p.hi = static_cast<float>(k.hi);
  p.lo2 = p.lo * p.lo;
  p.top = k.hi <= 1 ? p.hi : std::numeric_limits<float>::infinity();
  p.top2 = p.top * p.top;
  const int drop = 23 - std::clamp(k.mantissa_bits, 0, 23);
  p.mask = drop == 0 ? ~0u : ~((1u << drop) - 1);
  p.half = drop == 0 ? 0u : 1u << (drop - 1);
  return p;
}

// One value; branch-free (selects, no jumps) so that the loop over a column vectorises.
template <FloatKernel::Shape kShape>
inline uint32_t DrawOne(uint32_t bits, float width, uint32_t noise, const FloatParams& p) {
  constexpr uint32_t kExp = 0x7F800000u;
  const auto c = std::bit_cast<float>(bits);
  const auto s = static_cast<int32_t>((noise & 0xFFu) + ((noise >> 8) & 0xFFu)
                                      + ((noise >> 16) & 0xFFu) + (noise >> 24));
  const float d = static_cast<float>(s - 510) * kNoiseUnit * width;
  float x;
  if constexpr (kShape == FloatKernel::Shape::kScale) {
    const float mag = std::bit_cast<float>(bits & 0x7FFFFFFFu) * ExpApprox(d);
    float r = mag < p.lo ? p.lo2 / mag : mag;
    r = r > p.top ? p.top2 / r : r;
    x = std::bit_cast<float>(std::bit_cast<uint32_t>(r) | (bits & 0x80000000u));
  } else if constexpr (kShape == FloatKernel::Shape::kShift) {
    x = c + d;
    x = x < p.lo ? p.lo + (p.lo - x) : x;
    x = x > p.hi ? p.hi - (x - p.hi) : x;
    x = x < p.lo ? p.lo : x;
  } else {
    x = c + d;
    x = x > kPi ? x - kTwoPi : x;
    x = x < -kPi ? x + kTwoPi : x;
  }
  const uint32_t wb = (std::bit_cast<uint32_t>(x) + p.half) & p.mask;
  // Bitwise, not short-circuit, tests: no branch in the loop.
  const uint32_t keep =
      static_cast<uint32_t>(width == 0.0f) | static_cast<uint32_t>((bits & 0x7FFFFFFFu) == 0)
      | static_cast<uint32_t>((bits & kExp) == kExp) | static_cast<uint32_t>((wb & kExp) == kExp);
  const uint32_t m = 0u - keep;
  return (bits & m) | (wb & ~m);
}

template <FloatKernel::Shape kShape>
inline void DrawLoop(
    uint8_t* data, const float* widths, const uint32_t* noise, size_t count, const FloatParams& p) {
  for (size_t i = 0; i < count; ++i) {
    uint32_t b;
    std::memcpy(&b, data + 4 * i, 4);
    b = DrawOne<kShape>(b, widths[i], noise[i], p);
    std::memcpy(data + 4 * i, &b, 4);
  }
}

template <FloatKernel::Shape kShape>
__attribute__((target("avx2"))) void DrawAvx2(
    uint8_t* data, const float* widths, const uint32_t* noise, size_t count, const FloatParams& p) {
  DrawLoop<kShape>(data, widths, noise, count, p);
}

template <FloatKernel::Shape kShape>
void DrawBase(
    uint8_t* data, const float* widths, const uint32_t* noise, size_t count, const FloatParams& p) {
  DrawLoop<kShape>(data, widths, noise, count, p);
}

template <FloatKernel::Shape kShape>
void Draw(
    uint8_t* data, const float* widths, const uint32_t* noise, size_t count, const FloatParams& p) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    DrawAvx2<kShape>(data, widths, noise, count, p);
  } else {
    DrawBase<kShape>(data, widths, noise, count, p);
  }
}

// Runs of equal values: a distinct value and how often it occurs.
struct Run {
  double value;
  size_t count;
};

// The runs of sorted values.
std::vector<Run> CountRuns(std::span<const double> sorted) {
  std::vector<Run> runs;
  for (double v : sorted) {
    if (runs.empty() || runs.back().value != v) {
      runs.push_back({v, 0});
    }
    ++runs.back().count;
  }
  return runs;
}

// Non-zero values that occur in at least 1 % of the pool (and 3 times) become atoms of k:
// copied as they are, never smeared.
void ChooseAtoms(std::span<const Run> runs, size_t finite, FloatKernel* k) {
  const size_t atom_min = std::max<size_t>(3, (finite + 99) / 100);
  std::vector<Run> atoms;
  for (const Run& r : runs) {
    if (r.count >= atom_min && r.value != 0) {
      atoms.push_back(r);
    }
  }
  // The most frequent first; equal counts by value, so the choice is deterministic.
  std::sort(atoms.begin(), atoms.end(), [](const Run& a, const Run& b) {
    return a.count != b.count ? a.count > b.count : a.value < b.value;
  });
  atoms.resize(std::min(atoms.size(), kMaxAtoms));
  for (const Run& a : atoms) {
    k->atoms[k->num_atoms++] = a.value;
  }
}

// The continuous values: their pool positions, and the range and signs they cover.
struct Continuous {
  std::vector<size_t> at;
  bool positive = true, negative = true, in_pi = true;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  double lo_abs = lo, hi_abs = 0;
};

Continuous FindContinuous(std::span<const double> pool, const FloatKernel& k) {
  Continuous c;
  for (size_t i = 0; i < pool.size(); ++i) {
    const double v = pool[i];
    bool atom = v == 0 || !std::isfinite(v);
    for (uint32_t a = 0; a < k.num_atoms; ++a) {
      atom = atom || v == k.atoms[a];
    }
    if (atom) {
      continue;
    }
    c.at.push_back(i);
    c.positive = c.positive && v > 0;
    c.negative = c.negative && v < 0;
    c.in_pi = c.in_pi && std::fabs(v) <= 3.1416;
    c.lo = std::min(c.lo, v);
    c.hi = std::max(c.hi, v);
    c.lo_abs = std::min(c.lo_abs, std::fabs(v));
    c.hi_abs = std::max(c.hi_abs, std::fabs(v));
  }
  return c;
}

FloatKernel::Shape ChooseShape(const Continuous& c, bool angle) {
  if (angle && c.in_pi) {
    return FloatKernel::Shape::kAngle;
  }
  if ((c.positive || c.negative) && (c.hi_abs > 1 || c.hi_abs >= kDecades * c.lo_abs)) {
    // Scores and fractions within [0, 1] of a limited range (b-tags, MVA outputs) stay in
    // linear space: a log-space pull towards the mean would move a b-tag peak at 0.95.
    return FloatKernel::Shape::kScale;
  }
  return FloatKernel::Shape::kShift;
}

// Mean, variance and the base bandwidth h0 (Silverman's rule on the robust spread) of x.
struct Spread {
  double mean = 0;
  double var = 0;
  double h0 = 0;
};

Spread MeasureSpread(std::span<const double> x) {
  std::vector<double> sorted(x.begin(), x.end());
  std::sort(sorted.begin(), sorted.end());
  const auto n = static_cast<double>(x.size());
  Spread sp;
  for (double v : sorted) {
    sp.mean += v;
  }
  sp.mean /= n;
  for (double v : sorted) {
    sp.var += (v - sp.mean) * (v - sp.mean);
  }
  sp.var /= n - 1;
  const double sd = std::sqrt(sp.var);
  const double iqr = Quantile(sorted, 0.75) - Quantile(sorted, 0.25);
  const double spread = iqr > 0 ? std::min(sd, iqr / 1.34) : sd;
  sp.h0 = 0.9 * spread * std::pow(n, -0.2);
  return sp;
}

// Each continuous value's kernel: its centre (pulled towards the mean) and width, into k.
// x holds the values at c.at, in log space for kScale.
void PlaceKernels(std::span<const double> pool,
                  const Continuous& c,
                  const std::vector<double>& x,
                  const Spread& sp,
                  bool double_precision,
                  bool coherent,
                  FloatKernel* k) {
  const bool log_space = k->shape == FloatKernel::Shape::kScale;
  // A coherent kernel moves all values of an event by one displacement: one width for all,
  // and no pull, which would change the values' spread within the event.
  const bool adaptive = k->shape != FloatKernel::Shape::kAngle && !coherent;
  const std::vector<double> lambda =
      adaptive ? AdaptiveFactors(x, sp.h0) : std::vector<double>(x.size(), 1.0);
  const double h = kBandwidth * sp.h0;
  double mean_l2 = 0;
  for (double l : lambda) {
    mean_l2 += l * l;
  }
  mean_l2 /= static_cast<double>(x.size());
  // The pull towards the mean that keeps the pool's variance: (1 + kernel variance / pool
  // variance)^(-1/2). Angles are uniform around the circle: no pull.
  const double pull = adaptive ? 1.0 / std::sqrt(1.0 + h * h * mean_l2 / sp.var) : 1.0;
  k->centres.assign(pool.begin(), pool.end());
  k->widths.assign(pool.size(), 0.0f);
  for (size_t j = 0; j < c.at.size(); ++j) {
    const size_t i = c.at[j];
    if (coherent) {
      k->widths[i] = static_cast<float>(log_space ? std::min(Coarse(h), kMaxLogWidth) : Coarse(h));
      continue;  // centred on the pool's own values
    }
    const double xc = sp.mean + pull * (x[j] - sp.mean);
    double w = Coarse(pull * h * lambda[j]);
    if (log_space) {
      w = std::min(w, kMaxLogWidth);
      k->centres[i] =
          ToPrecision(std::copysign(std::exp(xc), pool[i]), k->mantissa_bits, double_precision);
    } else {
      k->centres[i] = ToPrecision(xc, k->mantissa_bits, double_precision);
    }
    k->widths[i] = static_cast<float>(w);
  }
}

}  // namespace

bool IsAngleName(std::string_view name) {
  return name.find("_phi") != std::string_view::npos
         || (name.size() >= 3 && name.substr(name.size() - 3) == "Phi");
}

FloatKernel FitKernel(std::span<const double> pool,
                      bool double_precision,
                      bool angle,
                      bool coherent) {
  FloatKernel k;
  k.mantissa_bits = 0;
  std::vector<double> finite;
  finite.reserve(pool.size());
  for (double v : pool) {
    if (std::isfinite(v)) {
      finite.push_back(v);
      k.mantissa_bits = std::max(k.mantissa_bits, MantissaBits(v, double_precision));
    }
  }
  if (finite.size() < 2) {
    return k;
  }
  std::sort(finite.begin(), finite.end());
  const std::vector<Run> runs = CountRuns(finite);
  if (runs.size() <= kDiscreteValues && finite.size() >= kDiscreteRepeats * runs.size()) {
    return k;  // discrete: copied
  }
  ChooseAtoms(runs, finite.size(), &k);
  const Continuous c = FindContinuous(pool, k);
  if (c.at.size() < 2) {
    return k;
  }
  const FloatKernel::Shape shape = ChooseShape(c, angle);
  const bool log_space = shape == FloatKernel::Shape::kScale;
  k.lo = log_space ? c.lo_abs : c.lo;
  k.hi = log_space ? c.hi_abs : c.hi;
  std::vector<double> x(c.at.size());
  for (size_t j = 0; j < c.at.size(); ++j) {
    x[j] = log_space ? std::log(std::fabs(pool[c.at[j]])) : pool[c.at[j]];
  }
  const Spread sp = MeasureSpread(x);
  if (!(sp.h0 > 0)) {
    return k;
  }
  k.shape = shape;
  PlaceKernels(pool, c, x, sp, double_precision, coherent, &k);
  return k;
}

void ApplyKernel(
    const FloatKernel& k, float* values, const float* widths, const uint32_t* noise, size_t count) {
  if (k.shape == FloatKernel::Shape::kCopy || count == 0) {
    return;
  }
  const FloatParams p = MakeFloatParams(k);
  auto* data = reinterpret_cast<uint8_t*>(values);
  switch (k.shape) {
    case FloatKernel::Shape::kScale:
      Draw<FloatKernel::Shape::kScale>(data, widths, noise, count, p);
      break;
    case FloatKernel::Shape::kShift:
      Draw<FloatKernel::Shape::kShift>(data, widths, noise, count, p);
      break;
    case FloatKernel::Shape::kAngle:
      Draw<FloatKernel::Shape::kAngle>(data, widths, noise, count, p);
      break;
    case FloatKernel::Shape::kCopy:
      break;
  }
}

void ApplyKernel(const FloatKernel& k,
                 double* values,
                 const float* widths,
                 const uint32_t* noise,
                 size_t count) {
  if (k.shape == FloatKernel::Shape::kCopy) {
    return;
  }
  // Double branches are rare in NanoAOD: a plain loop with the float path's arithmetic.
  constexpr uint64_t kExp = 0x7FF0000000000000ull;
  const int drop = 52 - std::clamp(k.mantissa_bits, 0, 52);
  const uint64_t mask = drop == 0 ? ~uint64_t{0} : ~((uint64_t{1} << drop) - 1);
  const uint64_t half = drop == 0 ? 0 : uint64_t{1} << (drop - 1);
  for (size_t i = 0; i < count; ++i) {
    const double c = values[i];
    if (widths[i] == 0.0f || c == 0 || !std::isfinite(c)) {
      continue;
    }
    const uint32_t w = noise[i];
    const auto s =
        static_cast<int32_t>((w & 0xFFu) + ((w >> 8) & 0xFFu) + ((w >> 16) & 0xFFu) + (w >> 24));
    const double d = static_cast<double>(s - 510) * static_cast<double>(kNoiseUnit)
                     * static_cast<double>(widths[i]);
    double x;
    if (k.shape == FloatKernel::Shape::kScale) {
      double mag = std::fabs(c) * ExpApprox(d);
      mag = mag < k.lo ? k.lo * k.lo / mag : mag;
      mag = k.hi <= 1 && mag > k.hi ? k.hi * k.hi / mag : mag;
      x = std::copysign(mag, c);
    } else if (k.shape == FloatKernel::Shape::kShift) {
      x = c + d;
      x = x < k.lo ? k.lo + (k.lo - x) : x;
      x = x > k.hi ? k.hi - (x - k.hi) : x;
      x = std::max(x, k.lo);
    } else {
      x = c + d;
      x = x > M_PI ? x - 2 * M_PI : x;
      x = x < -M_PI ? x + 2 * M_PI : x;
    }
    const uint64_t wb = (std::bit_cast<uint64_t>(x) + half) & mask;
    if ((wb & kExp) != kExp) {
      values[i] = std::bit_cast<double>(wb);
    }
  }
}

}  // namespace ferry::gen
