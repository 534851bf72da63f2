// Small deterministic random numbers for the generator: SplitMix64 (a counter-based mixer, so a
// value can be derived from a key without state) and xoshiro256** for streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferry::gen {

// SplitMix64's finaliser: a bijective mix of a 64-bit key.
inline uint64_t Mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// xoshiro256**: a fast stream generator seeded through Mix64. Not thread-safe; a value type.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& x : s_) {
      seed = Mix64(seed);
      x = seed;
    }
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) (n > 0), by multiply-shift (bias below 2^-32 for the n used here).
  uint64_t Below(uint64_t n) {
    __extension__ using U128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<U128>(Next()) * n) >> 64);
  }
  // Uniform in [lo, hi].
  uint64_t Between(uint64_t lo, uint64_t hi) { return lo + Below(hi - lo + 1); }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// count 32-bit noise words from r into (*out)[0, count): one random word serves two values, its
// high half the even one, its low half the odd one. Drawn ahead of a perturbation loop, so
// that the loop has no serial dependency and vectorises.
inline void FillNoiseWords(Rng& r, size_t count, std::vector<uint32_t>* out) {
  out->resize(count + 1);
  for (size_t k = 0; k < count; k += 2) {
    const uint64_t w = r.Next();
    (*out)[k] = static_cast<uint32_t>(w >> 32);
    (*out)[k + 1] = static_cast<uint32_t>(w);
  }
}

}  // namespace ferry::gen
