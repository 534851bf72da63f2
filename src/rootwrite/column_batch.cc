#include "rootwrite/column_batch.h"

#include <string>

#include "base/endian.h"

namespace ferry::rootwrite {
namespace {

using rootio::LeafType;

// LoadCount over a whole column, the type switch outside the loop (NanoAOD counters are
// 32-bit unsigned; the others take the general path).
void LoadCounts(LeafType t, const uint8_t* p, std::vector<uint64_t>& out) {
  if (t == LeafType::kUInt32) {
    for (size_t e = 0; e < out.size(); ++e) {
      out[e] = LoadLE<uint32_t>(p + 4 * e);
    }
    return;
  }
  const size_t vs = rootio::LeafTypeSize(t);
  for (size_t e = 0; e < out.size(); ++e) {
    out[e] = LoadCount(t, p + e * vs);
  }
}

// Every entry of a jagged column holds counts[e] * len values.
Status CheckCounts(const BranchSpec& s,
                   const rootio::Column& c,
                   const std::vector<uint64_t>& counts,
                   size_t n) {
  const auto len = static_cast<uint64_t>(s.len);
  // A branch-free pass (it vectorises) finds whether any entry is off; only then is the
  // first such entry looked for, to name it.
  uint64_t off = 0;
  for (size_t e = 0; e < n; ++e) {
    off |= (c.offsets[e + 1] - c.offsets[e]) ^ (counts[e] * len);
  }
  for (size_t e = 0; off != 0 && e < n; ++e) {
    uint64_t have = c.offsets[e + 1] - c.offsets[e];
    if (have != counts[e] * len) {
      return InvalidArgumentError("column for branch " + s.name + ": entry " + std::to_string(e)
                                  + " has " + std::to_string(have) + " values, its counter "
                                  + s.count + " says " + std::to_string(counts[e]));
    }
  }
  return OkStatus();
}

// The column's type, entry count and shape against its branch.
Status CheckShape(const BranchSpec& s, bool jagged_branch, const rootio::Column& c, int64_t n) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("column for branch " + s.name + ": " + why);
  };
  if (c.type != s.type) {
    return bad("holds " + std::string(rootio::LeafTypeName(c.type)));
  }
  if (c.num_entries != n) {
    return bad(std::to_string(c.num_entries) + " entries, the first column has "
               + std::to_string(n));
  }
  const bool variable = jagged_branch || s.type == LeafType::kString;
  if (c.jagged != variable) {
    return bad(c.jagged ? "is jagged, the branch is not" : "is not jagged, the branch is");
  }
  if (variable) {
    if (c.offsets.size() != static_cast<size_t>(n) + 1 || c.offsets.back() < c.offsets.front()) {
      return bad("offsets do not match its entries");
    }
    size_t unit = s.type == LeafType::kString ? 1 : c.value_size();
    if (c.offsets.back() * unit > c.bytes.size()) {
      return bad("offsets run past its values");
    }
  } else if (c.fixed_len != static_cast<uint32_t>(s.len)
             || c.bytes.size() != static_cast<size_t>(n) * c.fixed_len * c.value_size()) {
    return bad("fixed length " + std::to_string(c.fixed_len) + " or value count mismatch");
  }
  return OkStatus();
}

}  // namespace

uint64_t LoadCount(LeafType t, const uint8_t* p) {
  switch (t) {
    case LeafType::kInt8:
      return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(p[0])));
    case LeafType::kUInt8:
      return p[0];
    case LeafType::kInt16:
      return static_cast<uint64_t>(static_cast<int64_t>(LoadLE<int16_t>(p)));
    case LeafType::kUInt16:
      return LoadLE<uint16_t>(p);
    case LeafType::kInt32:
      return static_cast<uint64_t>(static_cast<int64_t>(LoadLE<int32_t>(p)));
    case LeafType::kUInt32:
      return LoadLE<uint32_t>(p);
    case LeafType::kInt64:
    case LeafType::kUInt64:
      return LoadLE<uint64_t>(p);
    default:
      return 0;
  }
}

Status CheckColumnBatch(std::span<const BranchSpec> specs,
                        std::span<const int32_t> count_of,
                        std::span<const rootio::Column* const> columns,
                        int64_t* n,
                        std::vector<std::vector<uint64_t>>* counts) {
  if (columns.size() != specs.size()) {
    return InvalidArgumentError(std::to_string(columns.size()) + " columns for "
                                + std::to_string(specs.size()) + " branches");
  }
  *n = specs.empty() ? 0 : columns[0]->num_entries;
  for (size_t i = 0; i < specs.size(); ++i) {
    FERRY_TRY(CheckShape(specs[i], count_of[i] >= 0, *columns[i], *n));
  }
  // Counter values once per batch (counters precede the branches they count).
  counts->resize(specs.size());
  std::vector<bool> loaded(specs.size(), false);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (count_of[i] < 0) {
      continue;
    }
    auto c = static_cast<size_t>(count_of[i]);
    std::vector<uint64_t>& v = (*counts)[c];
    if (!loaded[c]) {
      v.resize(static_cast<size_t>(*n));
      LoadCounts(specs[c].type, columns[c]->bytes.data(), v);
      loaded[c] = true;
    }
    FERRY_TRY(CheckCounts(specs[i], *columns[i], v, static_cast<size_t>(*n)));
  }
  return OkStatus();
}

}  // namespace ferry::rootwrite
