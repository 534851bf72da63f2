#include "rootio/tree_model.h"

#include <algorithm>

namespace ferry::rootio {

size_t LeafTypeSize(LeafType t) {
  switch (t) {
    case LeafType::kBool:
    case LeafType::kInt8:
    case LeafType::kUInt8:
      return 1;
    case LeafType::kInt16:
    case LeafType::kUInt16:
      return 2;
    case LeafType::kInt32:
    case LeafType::kUInt32:
    case LeafType::kFloat32:
      return 4;
    case LeafType::kInt64:
    case LeafType::kUInt64:
    case LeafType::kFloat64:
      return 8;
    case LeafType::kString:
    case LeafType::kUnknown:
      return 0;
  }
  return 0;
}

namespace {
struct TypeName {
  LeafType type;
  std::string_view name;
};
constexpr TypeName kTypeNames[] = {
    {LeafType::kBool, "Bool_t"},      {LeafType::kInt8, "Char_t"},
    {LeafType::kUInt8, "UChar_t"},    {LeafType::kInt16, "Short_t"},
    {LeafType::kUInt16, "UShort_t"},  {LeafType::kInt32, "Int_t"},
    {LeafType::kUInt32, "UInt_t"},    {LeafType::kInt64, "Long64_t"},
    {LeafType::kUInt64, "ULong64_t"}, {LeafType::kFloat32, "Float_t"},
    {LeafType::kFloat64, "Double_t"}, {LeafType::kString, "string"},
};
}  // namespace

std::string_view LeafTypeName(LeafType t) {
  for (const auto& tn : kTypeNames) {
    if (tn.type == t) {
      return tn.name;
    }
  }
  return "unknown";
}

LeafType LeafTypeFromName(std::string_view name) {
  for (const auto& tn : kTypeNames) {
    if (tn.name == name) {
      return tn.type;
    }
  }
  return LeafType::kUnknown;
}

bool IsIntegerLeafType(LeafType t) {
  switch (t) {
    case LeafType::kInt8:
    case LeafType::kUInt8:
    case LeafType::kInt16:
    case LeafType::kUInt16:
    case LeafType::kInt32:
    case LeafType::kUInt32:
    case LeafType::kInt64:
    case LeafType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool IsSignedLeafType(LeafType t) {
  return t == LeafType::kInt8 || t == LeafType::kInt16 || t == LeafType::kInt32
         || t == LeafType::kInt64;
}

int32_t TreeInfo::FindBranch(std::string_view branch_name) const {
  for (size_t i = 0; i < branches.size(); ++i) {
    if (branches[i].name == branch_name) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

int32_t TreeInfo::FindLeaf(std::string_view leaf_name) const {
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i].name == leaf_name) {
      return static_cast<int32_t>(i);
    }
  }
  int32_t b = FindBranch(leaf_name);
  if (b >= 0 && branches[static_cast<size_t>(b)].leaves.size() == 1) {
    return branches[static_cast<size_t>(b)].leaves[0];
  }
  return -1;
}

std::vector<EntryRange> TreeInfo::Clusters() const {
  // A corrupt header must not make this loop or allocate without bound: past kMaxClusters the
  // remaining entries form one last cluster.
  constexpr size_t kMaxClusters = 1u << 20;
  std::vector<EntryRange> out;
  if (entries <= 0) {
    return out;
  }
  int64_t start = 0;
  auto emit_run = [&](int64_t last, int64_t size) {
    if (size <= 0) {
      size = last - start + 1;
    }
    while (start <= last && out.size() < kMaxClusters) {
      int64_t end = last + 1 - start > size ? start + size : last + 1;
      out.push_back({start, end});
      start = end;
    }
  };
  // Explicit ranges first: range i ends at cluster_range_end[i] (inclusive).
  for (size_t i = 0; i < cluster_range_end.size() && start < entries; ++i) {
    int64_t last = std::min(cluster_range_end[i], entries - 1);
    if (last < start) {
      continue;
    }
    emit_run(last, i < cluster_size.size() ? cluster_size[i] : 0);
  }
  if (start < entries) {
    emit_run(entries - 1, auto_flush > 0 ? auto_flush : 0);
  }
  if (start < entries) {
    out.push_back({start, entries});
  }
  return out;
}

}  // namespace ferry::rootio
