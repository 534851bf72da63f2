#include "analysis/histogram.h"

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/hash.h"

namespace ferry::analysis {

Histogram::Histogram(std::string name, int bins, double lo, double hi)
    : name_(std::move(name)),
      bins_(bins),
      lo_(lo),
      hi_(hi),
      contents_(static_cast<size_t>(bins) + 2, 0.0) {
  assert(bins >= 1 && lo < hi);
}

void Histogram::Fill(double x, double weight) {
  ++entries_;
  size_t bin = 0;
  if (std::isnan(x) || x < lo_) {
    bin = 0;
  } else if (x >= hi_) {
    bin = static_cast<size_t>(bins_) + 1;
  } else {
    // Rounding can put x just below hi into bin `bins_`; clamp to the last regular bin.
    auto i = static_cast<int>((x - lo_) / (hi_ - lo_) * bins_);
    bin = static_cast<size_t>(std::min(std::max(i, 0), bins_ - 1)) + 1;
    sum_w_ += weight;
    sum_wx_ += weight * x;
  }
  contents_[bin] += weight;
}

bool Histogram::SameBinning(const Histogram& other) const {
  return bins_ == other.bins_ && lo_ == other.lo_ && hi_ == other.hi_;
}

void Histogram::Merge(const Histogram& other) {
  assert(SameBinning(other));
  for (size_t i = 0; i < contents_.size(); ++i) {
    contents_[i] += other.contents_[i];
  }
  entries_ += other.entries_;
  sum_w_ += other.sum_w_;
  sum_wx_ += other.sum_wx_;
}

double Histogram::Integral() const {
  double s = 0;
  for (int i = 1; i <= bins_; ++i) {
    s += contents_[static_cast<size_t>(i)];
  }
  return s;
}

double Histogram::Mean() const {
  return sum_w_ == 0 ? 0.0 : sum_wx_ / sum_w_;
}

double Histogram::BinLowEdge(int i) const {
  return lo_ + (hi_ - lo_) * (i - 1) / bins_;
}

uint64_t Histogram::Digest() const {
  hash::Xxh3Stream h;
  const auto bins = static_cast<int64_t>(bins_);
  h.Update(&bins, sizeof bins);
  h.Update(&lo_, sizeof lo_);
  h.Update(&hi_, sizeof hi_);
  h.Update(&entries_, sizeof entries_);
  // +0.0 and -0.0 compare equal but hash differently; contents start at +0.0 and only grow by
  // adding weights, so the bit patterns are canonical for non-negative weights.
  h.Update(contents_.data(), contents_.size() * sizeof(double));
  return h.Digest();
}

std::string DigestHex(uint64_t digest) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest));
  return buf;
}

}  // namespace ferry::analysis
