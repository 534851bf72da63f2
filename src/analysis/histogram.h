// Histogram: a fixed-binning one-dimensional histogram with exact, order-independent bin
// contents and a digest, so two analysis passes can be compared bit for bit.
//
// Bins: index 0 is the underflow (x < lo, and NaN), 1..bins are [lo + (i-1)w, lo + i w),
// bins + 1 is the overflow (x >= hi). Entries count every fill. Mean and Integral follow
// ROOT's TH1 conventions: they use in-range fills only.
//
// Determinism: with unit weights the bin contents are integers held exactly in doubles, so
// they do not depend on the order of fills or merges. The mean is a floating-point sum; it is
// reproducible when merges happen in a fixed order (the analysis merges clusters in file
// order).
// Thread-safety: a value type; not synchronised.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ferry::analysis {

class Histogram {
 public:
  Histogram() = default;
  // bins >= 1 and lo < hi (asserted).
  Histogram(std::string name, int bins, double lo, double hi);

  void Fill(double x, double weight = 1.0);
  // Adds other's contents; other must have the same binning (asserted).
  void Merge(const Histogram& other);
  bool SameBinning(const Histogram& other) const;

  const std::string& name() const { return name_; }
  int bins() const { return bins_; }
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  // bins + 2 values: underflow, the bins, overflow.
  std::span<const double> contents() const { return contents_; }
  double underflow() const { return contents_.empty() ? 0.0 : contents_.front(); }
  double overflow() const { return contents_.empty() ? 0.0 : contents_.back(); }
  uint64_t entries() const { return entries_; }
  // Sum of the in-range bin contents.
  double Integral() const;
  // Weighted mean of the in-range fills; 0 when there are none.
  double Mean() const;
  // Lower edge of bin i (1..bins+1).
  double BinLowEdge(int i) const;
  // XXH3-64 over the binning, the entry count and every bin content (flows included).
  uint64_t Digest() const;

 private:
  std::string name_;
  int bins_ = 0;
  double lo_ = 0;
  double hi_ = 0;
  std::vector<double> contents_;
  uint64_t entries_ = 0;
  double sum_w_ = 0;   // in-range
  double sum_wx_ = 0;  // in-range
};

// 16 lowercase hex digits.
std::string DigestHex(uint64_t digest);

}  // namespace ferry::analysis
