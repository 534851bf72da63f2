#include "replica/replica_codec.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

#include "rootio/cursor.h"
#include "rootio/key.h"

namespace ferry::replica {

// The page store's types this file works with.
namespace {

using Clock = std::chrono::steady_clock;

uint64_t Ns(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

// One encoding of the whole sample: each basket's stored payload, and the decoding time.
struct Encoded {
  codec::Setting setting;
  std::vector<ByteVector> payloads;
  uint64_t bytes = 0;
  double decode_ns_per_byte = 0;
};

// Decodes every payload into `out`, best of `passes`; ns per decompressed byte.
Result<double> TimeDecode(std::span<const ByteVector> stored,
                          std::span<const int32_t> objlen,
                          uint64_t raw_bytes,
                          int passes = 2) {
  ByteVector out;
  uint64_t best = UINT64_MAX;
  for (int pass = 0; pass < passes; ++pass) {
    const auto t0 = Clock::now();
    for (size_t i = 0; i < stored.size(); ++i) {
      FERRY_TRY(rootio::DecodePayload(stored[i], objlen[i], &out));
    }
    best = std::min(best, Ns(Clock::now() - t0));
  }
  return raw_bytes == 0 ? 0.0 : static_cast<double>(best) / static_cast<double>(raw_bytes);
}

Result<Encoded> Encode(const codec::Setting& setting,
                       std::span<const ByteVector> raw,
                       std::span<const int32_t> objlen,
                       uint64_t raw_bytes) {
  Encoded e;
  e.setting = setting;
  e.payloads.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const bool compressed = setting.algorithm != codec::Algorithm::kNone
                            && FERRY_TRY(codec::CompressPayload(setting, raw[i], &e.payloads[i]));
    if (!compressed) {
      e.payloads[i] = raw[i];  // stored raw, as the builder would
    }
    e.bytes += e.payloads[i].size();
  }
  e.decode_ns_per_byte = FERRY_TRY(TimeDecode(e.payloads, objlen, raw_bytes));
  return e;
}

CodecRate RateOf(const codec::Setting& s, uint64_t bytes, double ns_per_byte, uint64_t raw) {
  CodecRate r;
  r.setting = s;
  r.decode_bytes_per_s = ns_per_byte <= 0 ? UINT64_MAX : static_cast<uint64_t>(1e9 / ns_per_byte);
  r.compressed_per_mib = raw == 0 ? 0 : (bytes << 20) / raw;
  return r;
}

// Stored bytes of the sample when each basket takes its cheapest candidate at price `lambda`.
uint64_t PlannedBytes(const CodecPlan& plan,
                      std::span<const Encoded> all,
                      std::span<const ByteVector> raw) {
  uint64_t total = 0;
  std::vector<uint64_t> sizes(all.size());
  for (size_t b = 0; b < raw.size(); ++b) {
    for (size_t c = 0; c < all.size(); ++c) {
      sizes[c] = all[c].payloads[b].size();
    }
    total += sizes[plan.Choose(raw[b].size(), sizes)];
  }
  return total;
}

// Lets the caller wait between the sample's expensive steps (a background build), or stop the
// planning with an error (a background build giving its file up to an explicit one).
Status Step(const std::function<Status()>& pause) {
  return pause ? pause() : OkStatus();
}

// The sample decompressed, and its original encoding.
struct Sample {
  std::vector<ByteVector> raw;
  std::vector<ByteVector> original;
  std::vector<int32_t> objlen;
  uint64_t original_bytes = 0;
  uint64_t raw_bytes = 0;
  codec::Algorithm original_algorithm = codec::Algorithm::kNone;
};

Result<Sample> DecodeSample(std::span<const StoredUnit> units,
                            const std::function<Status()>& pause) {
  Sample s;
  for (const StoredUnit& u : units) {
    FERRY_TRY(Step(pause));
    s.original.emplace_back();
    s.original.back().assign(u.stored.begin(), u.stored.end());
    s.raw.emplace_back();
    FERRY_TRY(rootio::DecodePayload(u.stored, u.raw_bytes, &s.raw.back()));
    s.objlen.push_back(u.raw_bytes);
    s.original_bytes += u.stored.size();
    s.raw_bytes += s.raw.back().size();
    if (u.stored.size() != static_cast<size_t>(u.raw_bytes)
        && s.original_algorithm == codec::Algorithm::kNone) {
      s.original_algorithm = codec::DetectAlgorithm(u.stored);
    }
  }
  return s;
}

// The dense candidate: higher zstd levels cost compression time for little (13+ is an order
// of magnitude slower), so the search stops at 9, and goes there only while a level still
// shrinks the sample by more than 2%. Every level tried is rated in plan; the lowest level
// within 0.5% of the smallest is returned.
Result<Encoded> DensestZstd(const Sample& s,
                            const std::function<Status()>& pause,
                            CodecPlan* plan) {
  std::vector<Encoded> levels;
  for (int level : {3, 6, 9}) {
    FERRY_TRY(Step(pause));
    levels.push_back(
        FERRY_TRY(Encode({codec::Algorithm::kZstd, level}, s.raw, s.objlen, s.raw_bytes)));
    const size_t n = levels.size();
    if (n >= 2
        && static_cast<double>(levels[n - 1].bytes)
               > 0.98 * static_cast<double>(levels[n - 2].bytes)) {
      break;
    }
  }
  const uint64_t smallest =
      std::min_element(levels.begin(), levels.end(), [](const auto& a, const auto& b) {
        return a.bytes < b.bytes;
      })->bytes;
  for (Encoded& e : levels) {
    plan->rates.push_back(RateOf(e.setting, e.bytes, e.decode_ns_per_byte, s.raw_bytes));
  }
  for (Encoded& e : levels) {
    if (static_cast<double>(e.bytes) <= 1.005 * static_cast<double>(smallest)) {
      return std::move(e);
    }
  }
  return std::move(levels.back());  // not reached: the smallest is within 0.5% of itself
}

// The candidates the sample is encoded with: the configured codec, or under "auto" none, lz4
// and the dense zstd level. Sets plan's reason.
Result<std::vector<Encoded>> EncodeCandidates(const std::string& configured,
                                              const Sample& s,
                                              const std::function<Status()>& pause,
                                              CodecPlan* plan) {
  std::vector<Encoded> all;
  if (configured != "auto") {
    all.push_back(FERRY_TRY(
        Encode(FERRY_TRY(codec::Setting::Parse(configured)), s.raw, s.objlen, s.raw_bytes)));
    plan->why = "configured";
    return all;
  }
  all.push_back(FERRY_TRY(Encode(*codec::Setting::Parse("none"), s.raw, s.objlen, s.raw_bytes)));
  FERRY_TRY(Step(pause));
  all.push_back(FERRY_TRY(Encode(*codec::Setting::Parse("lz4"), s.raw, s.objlen, s.raw_bytes)));
  all.push_back(FERRY_TRY(DensestZstd(s, pause, plan)));
  plan->why = "each basket takes the fastest decoding its share of the disk budget allows";
  return all;
}

// The price of a stored byte: the smallest at which the sample fits `allowed` bytes (by
// doubling twice, then bisection), or infinite when nothing fits.
void SetLambda(std::span<const Encoded> all,
               std::span<const ByteVector> raw,
               uint64_t allowed,
               CodecPlan* plan) {
  plan->lambda = 0;
  if (PlannedBytes(*plan, all, raw) <= allowed) {
    return;
  }
  double lo = 0;
  double hi = 1;
  plan->lambda = hi;
  while (PlannedBytes(*plan, all, raw) > allowed && hi < 1e12) {
    lo = hi;
    hi *= 4;
    plan->lambda = hi;
  }
  if (hi >= 1e12) {
    plan->lambda = HUGE_VAL;  // nothing fits: the smallest encoding everywhere
    plan->why += "; the budget is too small: the smallest encoding everywhere";
    return;
  }
  for (int i = 0; i < 40; ++i) {
    plan->lambda = (lo + hi) / 2;
    (PlannedBytes(*plan, all, raw) > allowed ? lo : hi) = plan->lambda;
  }
  plan->lambda = hi;
}

// A candidate the sample gave (almost) nothing to is not worth encoding every basket with:
// the builder encodes each basket once per candidate. The dense algorithm always stays.
void DropIdleCandidates(std::span<const Encoded> all, const Sample& s, CodecPlan* plan) {
  std::vector<uint64_t> won(all.size(), 0);
  std::vector<uint64_t> sizes(all.size());
  for (size_t b = 0; b < s.raw.size(); ++b) {
    for (size_t c = 0; c < all.size(); ++c) {
      sizes[c] = all[c].payloads[b].size();
    }
    won[plan->Choose(s.raw[b].size(), sizes)] += s.raw[b].size();
  }
  CodecPlan kept = *plan;
  kept.candidates.clear();
  kept.decode_ns_per_byte.clear();
  for (size_t c = 0; c < all.size(); ++c) {
    if (won[c] * 100 >= s.raw_bytes || all[c].setting.algorithm == plan->dense.algorithm) {
      kept.candidates.push_back(plan->candidates[c]);
      kept.decode_ns_per_byte.push_back(plan->decode_ns_per_byte[c]);
    }
  }
  *plan = std::move(kept);
}

}  // namespace

size_t CodecPlan::Choose(uint64_t raw_bytes, std::span<const uint64_t> stored_bytes) const {
  size_t best = 0;
  double best_cost = HUGE_VAL;
  for (size_t c = 0; c < stored_bytes.size() && c < candidates.size(); ++c) {
    // An infinite price: the smallest wins, decoding time breaking ties.
    const double cost = std::isinf(lambda)
                            ? static_cast<double>(stored_bytes[c])
                                  + 1e-9 * decode_ns_per_byte[c] * static_cast<double>(raw_bytes)
                            : decode_ns_per_byte[c] * static_cast<double>(raw_bytes)
                                  + lambda * static_cast<double>(stored_bytes[c]);
    if (cost < best_cost) {
      best_cost = cost;
      best = c;
    }
  }
  return best;
}

Result<StoredUnit> StoredUnitOfRecord(std::span<const uint8_t> record) {
  rootio::Cursor c(record);
  rootio::Key key = FERRY_TRY(rootio::ParseKey(c));
  if (key.nbytes < key.keylen || static_cast<size_t>(key.nbytes) > record.size()) {
    return CorruptionError("basket record of the codec sample does not parse");
  }
  StoredUnit u;
  u.stored.assign(record.begin() + key.keylen, record.begin() + key.nbytes);
  u.raw_bytes = key.objlen;
  return u;
}

Status CheckReplicaCodec(std::string_view configured) {
  if (configured == "auto") {
    return OkStatus();
  }
  auto setting = codec::Setting::Parse(configured);
  if (!setting
      || (setting->algorithm != codec::Algorithm::kZstd
          && setting->algorithm != codec::Algorithm::kLz4
          && setting->algorithm != codec::Algorithm::kNone)) {
    return InvalidArgumentError("must be auto, zstd:N, lz4 or none");
  }
  return OkStatus();
}

Result<CodecPlan> PlanReplicaCodec(std::span<const StoredUnit> units,
                                   const std::string& configured,
                                   double ratio_bound,
                                   const std::function<Status()>& pause) {
  const Sample sample = FERRY_TRY(DecodeSample(units, pause));
  CodecPlan plan;
  plan.sample_bytes = sample.raw_bytes;
  // The original encoding is timed once: it is reported, not chosen (and LZMA is slow).
  FERRY_TRY(Step(pause));
  plan.rates.push_back(
      RateOf({sample.original_algorithm, 0}, sample.original_bytes,
             FERRY_TRY(TimeDecode(sample.original, sample.objlen, sample.raw_bytes, 1)),
             sample.raw_bytes));
  const std::vector<Encoded> all = FERRY_TRY(EncodeCandidates(configured, sample, pause, &plan));
  for (const Encoded& e : all) {
    plan.candidates.push_back(e.setting);
    plan.decode_ns_per_byte.push_back(e.decode_ns_per_byte);
    // Under "auto" every zstd level's rate is in already (DensestZstd).
    if (configured != "auto" || e.setting.algorithm != codec::Algorithm::kZstd) {
      plan.rates.push_back(RateOf(e.setting, e.bytes, e.decode_ns_per_byte, sample.raw_bytes));
    }
  }
  plan.dense = std::min_element(all.begin(), all.end(), [](const auto& a, const auto& b) {
                 return a.bytes < b.bytes;
               })->setting;
  SetLambda(all, sample.raw,
            static_cast<uint64_t>(ratio_bound * static_cast<double>(sample.original_bytes)), &plan);
  plan.sample_ratio = sample.original_bytes == 0
                          ? 0
                          : static_cast<double>(PlannedBytes(plan, all, sample.raw))
                                / static_cast<double>(sample.original_bytes);
  if (plan.candidates.size() > 1) {
    DropIdleCandidates(all, sample, &plan);
  }
  return plan;
}

}  // namespace ferry::replica
