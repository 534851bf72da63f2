// Choosing a replica's encodings by measurement on this machine (docs/format/replica.md).
//
// The objective is the decoding time of a warm pass, the constraint the disk budget: the
// replica's baskets may take `ratio_bound` times their size in the original encoding (the
// caller derives it from replica_budget and what the tree records take). A single codec rarely
// is the answer: zlib-1 data barely shrinks under zstd, so zstd at the original's size decodes
// only ~1.3x faster, while LZ4 decodes ~3x faster but takes ~1.4x the space. The plan mixes
// them per basket:
//
// 1. A sample of the hot baskets (~1 MiB as stored, picked across the file) is decompressed.
// 2. Candidates are measured on it: raw, LZ4, and the "dense" zstd level — the one of 3, 6, 9
//    that makes the sample smallest (rising levels tried while each shrinks it by more than 2%;
//    a lower level when within 0.5%: it compresses faster).
//    Each gets a decoding cost in ns per decompressed byte (best of two timed passes).
// 3. A price λ of a stored byte, in ns, is found on the sample by bisection: each basket takes
//    the candidate with the least  decode_ns + λ × stored_bytes, and λ is the smallest price
//    at which the sample fits the bound. Baskets that compress well under LZ4 take it (little
//    extra space for much faster decoding); those only zstd shrinks keep zstd; incompressible
//    ones are stored raw.
// 4. The builder encodes every basket with each candidate and keeps Choose()'s pick; a
//    candidate that won less than 1% of the sample is dropped first (each costs an encoding).
// With a configured codec (replica_codec = zstd:N | lz4 | none) there is one candidate.
//
// Thread-safety: PlanReplicaCodec is a pure function (per-thread codec contexts); a CodecPlan
// is a value and Choose() is const.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "codec/compression.h"
#include "replica/replica_manifest.h"

namespace ferry::replica {

struct CodecPlan {
  std::vector<codec::Setting> candidates;
  std::vector<double> decode_ns_per_byte;  // per candidate
  double lambda = 0;                       // ns of decoding one stored byte is worth
  codec::Setting dense;                    // the densest candidate (also for tree records)
  std::vector<CodecRate> rates;            // the original encoding first, then the candidates
  uint64_t sample_bytes = 0;               // decompressed bytes of the sample
  double sample_ratio = 0;                 // planned stored bytes / original stored bytes
  std::string why;

  // The candidate a basket of `raw_bytes` decompressed takes, given what each one stored.
  size_t Choose(uint64_t raw_bytes, std::span<const uint64_t> stored_bytes) const;
};

// One unit of the sample as the original file stores it: a basket's payload (its key header
// left out) or an RNTuple page (its checksum left out), and its decompressed size. Stored
// raw when the two sizes are equal.
struct StoredUnit {
  std::vector<uint8_t> stored;
  int32_t raw_bytes = 0;
};
// The stored payload of a basket record (key + stored payload).
Result<StoredUnit> StoredUnitOfRecord(std::span<const uint8_t> record);

// `units`: sample units in their original encoding; `configured`:
// "auto" or a codec; `ratio_bound`: stored bytes allowed per original stored byte; `pause`
// (may be empty) is called between the decoding of sample baskets and between candidates (a
// background build waits in it while an analysis runs; the timings are taken between calls);
// an error it returns ends the planning with that error.
// The replica_codec conf value: "auto", or a zstd, lz4 or none setting (codec::Setting::Parse).
// InvalidArgument saying so for anything else.
Status CheckReplicaCodec(std::string_view configured);

Result<CodecPlan> PlanReplicaCodec(std::span<const StoredUnit> units,
                                   const std::string& configured,
                                   double ratio_bound,
                                   const std::function<Status()>& pause = {});

}  // namespace ferry::replica
