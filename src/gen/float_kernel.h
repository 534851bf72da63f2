// FloatKernel: the smooth perturbation the object model applies to one floating-point branch:
// a smoothed bootstrap of the branch's pool (every value the template has for it).
//
// FitKernel decides, per branch:
//   - kCopy: values are copied unchanged. For discrete branches (at most 32 distinct values,
//     each seen four times on average: flags, weights of +-w, counts stored as floats) and for
//     pools of fewer than two continuous values.
//   - atoms: values seen at least 3 times and in at least 1% of the pool (sentinels such as
//     Jet_btagCSVV2 = -10, defaults such as LHE_AlphaS = 0.118), at most kMaxAtoms of them,
//     plus zero, infinities and NaN, are kept exactly: point masses, not samples of a density.
//   - the continuous rest is resampled with a kernel, in a space chosen from the values:
//       kScale: positive (or negative) quantities: in log space, |v| * exp(d), reflected at the
//               smallest magnitude of the pool (a pt threshold stays a threshold), and at the
//               largest where that is at most 1 (momentum fractions, isolation ratios);
//       kShift: quantities of both signs, and scores within [0, 1] spanning less than two
//               decades (b-tags, MVA outputs, whose peaks a log-space pull would move):
//               v + d, reflected into the pool's [lo, hi];
//       kAngle: branches named like an azimuth within [-pi, pi]: v + d, wrapped around.
// Kernel widths (in that space): Silverman's rule, 0.9 * min(sd, IQR / 1.34) * n^(-1/5),
// times Abramson's adaptive factor (f(x) / geometric mean of f)^(-1/2) from a pilot density
// f: wider where the pool is sparse, so that a tail sampled by a few values is extrapolated
// smoothly, narrower in its core. Each value is first pulled towards the pool's mean by
// 1 / sqrt(1 + kernel variance / pool variance) (the shrunk smoothed bootstrap), so the spread
// stays the pool's. Angles keep a fixed width and no pull.
//
// The displacement d is the kernel width times a sum of four uniform bytes of a 32-bit noise
// word, centred and scaled (an Irwin-Hall kernel: smooth, bounded at 3.46 widths, pure
// integer-to-float arithmetic so that values are identical with and without AVX2). Results
// are rounded to the branch's mantissa precision (the most significant bits any pool value
// uses: NanoAOD rounds each branch to a fixed precision, and keeping it keeps compression
// ratios those of real NanoAOD).
//
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace ferry::gen {

inline constexpr size_t kMaxAtoms = 4;

struct FloatKernel {
  enum class Shape : uint8_t { kCopy, kScale, kShift, kAngle };
  Shape shape = Shape::kCopy;
  double lo = 0, hi = 0;  // range of the continuous values (of magnitudes for kScale)
  std::array<double, kMaxAtoms> atoms{};  // values kept exactly; the first num_atoms are used
  uint32_t num_atoms = 0;
  int mantissa_bits = 52;  // significant mantissa bits results keep (23 at most for floats)
  // Per pool value, in pool order (empty for kCopy): where its kernel sits, and its width
  // (log units for kScale; 0 for atoms, which stay as they are).
  std::vector<double> centres;
  std::vector<float> widths;
};

// Fits the kernel of a branch to its pool (values in template order). double_precision: the
// branch is Double_t (mantissa bits counted out of 52, else 23). angle: named like an azimuth
// (IsAngleName). coherent: the caller moves all values of an event by one displacement (a
// collection drawn whole: a common pt scale, a common shift in eta, a rotation in phi keep a
// generator record's kinematics and a weight vector's shape): one width for every value
// (Silverman's, no adaptive factor), no pull, centres at the pool's values.
FloatKernel FitKernel(std::span<const double> pool,
                      bool double_precision,
                      bool angle,
                      bool coherent = false);

// True for names of azimuthal angles: "*_phi*" or "*Phi" (MET_phi, PuppiMET_phiJERUp,
// MET_fiducialGenPhi).
bool IsAngleName(std::string_view name);

// Resamples count values in place: values[i] holds a centre on entry (centres gathered by the
// caller, native floats or doubles) and its drawn value on return, with widths[i] and
// noise[i]. Width 0, zeros, infinities and NaN pass unchanged.
void ApplyKernel(
    const FloatKernel& k, float* values, const float* widths, const uint32_t* noise, size_t count);
void ApplyKernel(
    const FloatKernel& k, double* values, const float* widths, const uint32_t* noise, size_t count);

}  // namespace ferry::gen
