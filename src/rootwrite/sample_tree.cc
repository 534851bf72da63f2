#include "rootwrite/sample_tree.h"

#include <vector>

namespace ferry::rootwrite::sample {

using rootio::LeafType;

Status Write(const std::string& path,
             const FileOptions& file_options,
             const TreeOptions& tree_options,
             bool with_nan,
             bool two_trees) {
  auto file = FERRY_TRY(FileWriter::Create(path, file_options));
  TreeWriter tw(*file, tree_options);
  int32_t b_bool = FERRY_TRY(tw.AddBranch({"flag", LeafType::kBool}));
  int32_t b_i8 = FERRY_TRY(tw.AddBranch({"i8", LeafType::kInt8}));
  int32_t b_u8 = FERRY_TRY(tw.AddBranch({"u8", LeafType::kUInt8}));
  int32_t b_i16 = FERRY_TRY(tw.AddBranch({"i16", LeafType::kInt16}));
  int32_t b_u16 = FERRY_TRY(tw.AddBranch({"u16", LeafType::kUInt16}));
  int32_t b_i32 = FERRY_TRY(tw.AddBranch({"i32", LeafType::kInt32}));
  int32_t b_u32 = FERRY_TRY(tw.AddBranch({"u32", LeafType::kUInt32}));
  int32_t b_i64 = FERRY_TRY(tw.AddBranch({"i64", LeafType::kInt64}));
  int32_t b_u64 = FERRY_TRY(tw.AddBranch({"event", LeafType::kUInt64}));
  int32_t b_f = FERRY_TRY(tw.AddBranch({"f", LeafType::kFloat32}));
  int32_t b_d = FERRY_TRY(tw.AddBranch({"d", LeafType::kFloat64}));
  int32_t b_arr = FERRY_TRY(tw.AddBranch({"arr", LeafType::kFloat64, 3}));
  int32_t b_n = FERRY_TRY(tw.AddBranch({"nJet", LeafType::kUInt32}));
  int32_t b_pt = FERRY_TRY(tw.AddBranch({"Jet_pt", LeafType::kFloat32, 1, "nJet"}));
  int32_t b_id = FERRY_TRY(tw.AddBranch({"Jet_id", LeafType::kBool, 1, "nJet"}));
  int32_t b_s = FERRY_TRY(tw.AddBranch({"str", LeafType::kString}));
  std::vector<float> pts;
  bool ids[8] = {};
  for (int e = 0; e < kEntries; ++e) {
    tw.Set<bool>(b_bool, e % 3 == 0);
    tw.Set<int8_t>(b_i8, static_cast<int8_t>(e % 256 - 128));
    tw.Set<uint8_t>(b_u8, static_cast<uint8_t>(e % 256));
    tw.Set<int16_t>(b_i16, static_cast<int16_t>(-e));
    tw.Set<uint16_t>(b_u16, static_cast<uint16_t>(e * 60));
    tw.Set<int32_t>(b_i32, -e * 1000);
    tw.Set<uint32_t>(b_u32, static_cast<uint32_t>(e) * 4000000u);
    tw.Set<int64_t>(b_i64, I64(e));
    tw.Set<uint64_t>(b_u64, Event(e));
    tw.Set<float>(b_f, static_cast<float>(e) / 3.0f);
    tw.Set<double>(b_d, D(e, with_nan));
    double a[3] = {e * 1.0, e * 2.0, -e * 3.0};
    tw.SetArray<double>(b_arr, a);
    uint32_t n = Count(e);
    tw.Set<uint32_t>(b_n, n);
    pts.clear();
    for (uint32_t j = 0; j < n; ++j) {
      pts.push_back(Pt(e, j));
      ids[j] = Id(e, j);
    }
    tw.SetArray<float>(b_pt, pts);
    tw.SetArray<bool>(b_id, std::span<const bool>(ids, n));
    tw.SetString(b_s, Str(e));
    FERRY_TRY(tw.Fill());
  }
  FERRY_TRY(tw.Close());
  if (two_trees) {
    TreeWriter meta(*file, TreeOptions{.name = "Meta", .title = "run metadata"});
    int32_t run = FERRY_TRY(meta.AddBranch({"run", LeafType::kUInt32}));
    int32_t tag = FERRY_TRY(meta.AddBranch({"tag", LeafType::kString}));
    for (uint32_t r = 0; r < 3; ++r) {
      meta.Set<uint32_t>(run, 273150 + r);
      meta.SetString(tag, "run-" + std::to_string(r));
      FERRY_TRY(meta.Fill());
    }
    FERRY_TRY(meta.Close());
  }
  return file->Close();
}

}  // namespace ferry::rootwrite::sample
