#include "cache/replica_codec.h"

#include <algorithm>
#include <chrono>

#include "rootio/cursor.h"
#include "rootio/key.h"

namespace ferry::cache {
namespace {

using Clock = std::chrono::steady_clock;

struct Payload {
  std::span<const uint8_t> stored;  // as in the original record
  int32_t objlen = 0;
};

struct Measured {
  codec::Setting setting;
  uint64_t bytes = 0;      // sample size in this encoding
  uint64_t decode_ns = 0;  // best of two
  uint64_t encode_ns = 0;
};

uint64_t Ns(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

// Decodes every payload (stored: framed or raw) into `out`, best of two passes.
Result<uint64_t> TimeDecode(std::span<const ByteVector> encoded,
                            std::span<const int32_t> objlen,
                            ByteVector& out) {
  uint64_t best = UINT64_MAX;
  for (int pass = 0; pass < 2; ++pass) {
    const auto t0 = Clock::now();
    for (size_t i = 0; i < encoded.size(); ++i) {
      FERRY_TRY(rootio::DecodePayload(encoded[i], objlen[i], &out));
    }
    best = std::min(best, Ns(Clock::now() - t0));
  }
  return best;
}

Result<Measured> Measure(const codec::Setting& setting,
                         std::span<const ByteVector> raw,
                         std::span<const int32_t> objlen) {
  Measured m;
  m.setting = setting;
  std::vector<ByteVector> encoded(raw.size());
  const auto t0 = Clock::now();
  for (size_t i = 0; i < raw.size(); ++i) {
    const bool compressed = setting.algorithm != codec::Algorithm::kNone
                            && FERRY_TRY(codec::CompressPayload(setting, raw[i], &encoded[i]));
    if (!compressed) {
      encoded[i] = raw[i];  // stored raw, as the builder would
    }
    m.bytes += encoded[i].size();
  }
  m.encode_ns = Ns(Clock::now() - t0);
  ByteVector out;
  m.decode_ns = FERRY_TRY(TimeDecode(encoded, objlen, out));
  return m;
}

CodecRate RateOf(const Measured& m, uint64_t sample_bytes) {
  CodecRate r;
  r.setting = m.setting;
  r.decode_bytes_per_s =
      m.decode_ns == 0 ? UINT64_MAX : sample_bytes * 1'000'000'000ull / m.decode_ns;
  r.compressed_per_mib = sample_bytes == 0 ? 0 : (m.bytes << 20) / sample_bytes;
  return r;
}

}  // namespace

Result<CodecChoice> ChooseReplicaCodec(std::span<const std::vector<uint8_t>> records,
                                       const std::string& configured,
                                       uint32_t budget_percent) {
  // The sample decompressed, and what it costs in its original encoding.
  std::vector<ByteVector> raw;
  std::vector<ByteVector> original;
  std::vector<int32_t> objlen;
  uint64_t original_bytes = 0;
  uint64_t sample_bytes = 0;
  codec::Algorithm original_algorithm = codec::Algorithm::kNone;
  for (const std::vector<uint8_t>& rec : records) {
    rootio::Cursor c(rec);
    rootio::Key key = FERRY_TRY(rootio::ParseKey(c));
    if (key.nbytes < key.keylen || static_cast<size_t>(key.nbytes) > rec.size()) {
      return CorruptionError("basket record of the codec sample does not parse");
    }
    std::span<const uint8_t> stored(rec.data() + key.keylen,
                                    static_cast<size_t>(key.nbytes - key.keylen));
    original.emplace_back();
    original.back().assign(stored.begin(), stored.end());
    raw.emplace_back();
    FERRY_TRY(rootio::DecodePayload(stored, key.objlen, &raw.back()));
    objlen.push_back(key.objlen);
    original_bytes += stored.size();
    sample_bytes += raw.back().size();
    if (key.compressed() && original_algorithm == codec::Algorithm::kNone) {
      original_algorithm = codec::DetectAlgorithm(stored);
    }
  }
  CodecChoice choice;
  choice.sample_bytes = sample_bytes;
  const uint32_t percent = budget_percent != 0
                               ? budget_percent
                               : (original_algorithm == codec::Algorithm::kLzma ? 150u : 100u);
  choice.budget_bytes = original_bytes * percent / 100;
  {
    Measured orig;
    orig.setting = {original_algorithm, 0};
    orig.bytes = original_bytes;
    ByteVector out;
    orig.decode_ns = FERRY_TRY(TimeDecode(original, objlen, out));
    choice.rates.push_back(RateOf(orig, sample_bytes));
  }
  if (configured != "auto") {
    Measured m = FERRY_TRY(Measure(FERRY_TRY(codec::Setting::Parse(configured)), raw, objlen));
    choice.rates.push_back(RateOf(m, sample_bytes));
    choice.setting = m.setting;
    choice.why = "configured";
    return choice;
  }
  std::vector<Measured> all;
  for (const char* name : {"none", "lz4"}) {
    all.push_back(FERRY_TRY(Measure(*codec::Setting::Parse(name), raw, objlen)));
  }
  for (int level : {1, 3, 6, 9, 13, 19}) {
    all.push_back(FERRY_TRY(Measure({codec::Algorithm::kZstd, level}, raw, objlen)));
    if (all.back().bytes <= choice.budget_bytes) {
      break;
    }
  }
  for (const Measured& m : all) {
    choice.rates.push_back(RateOf(m, sample_bytes));
  }
  const Measured* fastest = nullptr;
  for (const Measured& m : all) {
    if (m.bytes <= choice.budget_bytes && (!fastest || m.decode_ns < fastest->decode_ns)) {
      fastest = &m;
    }
  }
  if (fastest == nullptr) {
    const Measured* smallest = &all.front();
    for (const Measured& m : all) {
      smallest = m.bytes < smallest->bytes ? &m : smallest;
    }
    choice.setting = smallest->setting;
    choice.why = "nothing fits the budget: the smallest";
    return choice;
  }
  const Measured* pick = fastest;
  for (const Measured& m : all) {
    if (m.bytes <= choice.budget_bytes && m.decode_ns * 10 <= fastest->decode_ns * 11
        && m.encode_ns < pick->encode_ns) {
      pick = &m;
    }
  }
  choice.setting = pick->setting;
  choice.why = "fastest decoding within the budget";
  return choice;
}

}  // namespace ferry::cache
