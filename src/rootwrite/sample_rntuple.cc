#include "rootwrite/sample_rntuple.h"

#include <cstring>
#include <functional>
#include <limits>
#include <utility>

#include "base/endian.h"
#include "base/json_writer.h"
#include "rootio/rntuple.h"
#include "rootio/root_file.h"
#include "rootwrite/column_batch.h"
#include "rootwrite/sample_tree.h"

namespace ferry::rootwrite::sample {
namespace {

using rootio::LeafType;

template <class T>
void Put(rootio::Column& c, T v) {
  const size_t at = c.bytes.size();
  c.bytes.resize(at + sizeof(T));
  std::memcpy(c.bytes.data() + at, &v, sizeof(T));
}

uint32_t ObjCount(int64_t e) {
  return static_cast<uint32_t>((e * 5) % 7);  // 0 to 6, zero every 7th entry
}
int32_t JetCount(int64_t e) {
  return e % 3 == 0 ? 0 : static_cast<int32_t>(e % 4);
}
// 64-bit values at both extremes and in between: zigzag and split must keep every bit.
int64_t Big(int64_t e, int64_t j) {
  switch (e % 5) {
    case 0:
      return std::numeric_limits<int64_t>::min() + j;
    case 1:
      return std::numeric_limits<int64_t>::max() - j;
    default:
      return -e * 1000003 + j;
  }
}

struct SampleBranch {
  BranchSpec spec;
  // Appends entry e's value(s); returns how many (jagged branches).
  std::function<uint32_t(int64_t, rootio::Column&)> fill;
};

template <class T>
SampleBranch Scalar(std::string name, std::function<T(int64_t)> f) {
  return {{name, LeafTypeOf<T>()}, [f](int64_t e, rootio::Column& c) {
            Put<T>(c, f(e));
            return 1u;
          }};
}

template <class T>
SampleBranch Member(std::string name,
                    std::string count,
                    const std::function<uint32_t(int64_t)>& n,
                    std::function<T(int64_t, uint32_t)> f) {
  return {{name, LeafTypeOf<T>(), 1, count}, [n, f](int64_t e, rootio::Column& c) {
            for (uint32_t j = 0; j < n(e); ++j) {
              Put<T>(c, f(e, j));
            }
            return n(e);
          }};
}

SampleBranch Array3(std::string name) {
  return {{std::move(name), LeafType::kFloat32, 3}, [](int64_t e, rootio::Column& c) {
            for (int k = 0; k < 3; ++k) {
              Put<float>(c, static_cast<float>(e * 3 + k) / 8.0f);
            }
            return 3u;
          }};
}

// Strings of 0 to 299 characters (ROOT's TString switches to a long length past 254).
SampleBranch Text(std::string name) {
  return {{std::move(name), LeafType::kString}, [](int64_t e, rootio::Column& c) {
            const std::string s =
                e % 50 == 0 ? std::string(static_cast<size_t>(300 - e % 7), 'x')
                            : "entry-" + std::to_string(e).substr(0, static_cast<size_t>(e % 9));
            for (char ch : s) {
              Put<char>(c, ch);
            }
            return static_cast<uint32_t>(s.size());
          }};
}

const std::vector<SampleBranch>& Branches() {
  auto jets = [](int64_t e) {
    return static_cast<uint32_t>(JetCount(e));
  };
  auto none = [](int64_t) {
    return 0u;
  };
  static const std::vector<SampleBranch> kBranches = {
      Scalar<bool>("flag", [](int64_t e) { return e % 3 == 0; }),
      Scalar<int8_t>("i8", [](int64_t e) { return static_cast<int8_t>(e * 37); }),
      Scalar<uint8_t>("u8", [](int64_t e) { return static_cast<uint8_t>(e * 13); }),
      Scalar<int16_t>("i16", [](int64_t e) { return static_cast<int16_t>(e * -977); }),
      Scalar<uint16_t>("u16", [](int64_t e) { return static_cast<uint16_t>(e * 4099); }),
      Scalar<int32_t>("i32", [](int64_t e) { return static_cast<int32_t>(e * -1000003); }),
      Scalar<uint32_t>("u32", [](int64_t e) { return static_cast<uint32_t>(e * 2654435761u); }),
      Scalar<int64_t>("i64", [](int64_t e) { return Big(e, 0); }),
      Scalar<uint64_t>("u64",
                       [](int64_t e) { return static_cast<uint64_t>(e) * 0x9E3779B97F4A7C15u; }),
      Scalar<float>("f", [](int64_t e) { return static_cast<float>(e) * 0.25f - 100.0f; }),
      Scalar<double>("d", [](int64_t e) { return static_cast<double>(e) / 7.0; }),
      Array3("xyz"),
      Text("tag"),
      Scalar<uint32_t>("nObj", ObjCount),
      Member<float>("Obj_pt", "nObj", ObjCount,
                    [](int64_t e, uint32_t j) {
                      return static_cast<float>(e) * 0.5f + static_cast<float>(j);
                    }),
      Member<bool>("Obj_ok", "nObj", ObjCount,
                   [](int64_t e, uint32_t j) { return (e + j) % 2 == 0; }),
      Member<int16_t>(
          "Obj_q", "nObj", ObjCount,
          [](int64_t e, uint32_t j) { return static_cast<int16_t>(int64_t{j} * 1000 - e); }),
      Member<int64_t>("Obj_big", "nObj", ObjCount,
                      [](int64_t e, uint32_t j) { return Big(e + j, j); }),
      Scalar<int32_t>("nJet", JetCount),
      Member<double>("Jet_e", "nJet", jets,
                     [](int64_t e, uint32_t j) { return static_cast<double>(e) * 1.5 + j / 3.0; }),
      Member<uint8_t>("Jet_id", "nJet", jets,
                      [](int64_t e, uint32_t j) { return static_cast<uint8_t>(e + j); }),
      Scalar<uint32_t>("nNone", none),
      Member<float>("None_x", "nNone", none, [](int64_t, uint32_t) { return 0.0f; }),
  };
  return kBranches;
}

}  // namespace

std::vector<BranchSpec> RntupleBranches() {
  std::vector<BranchSpec> out;
  for (const SampleBranch& b : Branches()) {
    out.push_back(b.spec);
  }
  return out;
}

std::vector<rootio::Column> RntupleBatch(int64_t first, int64_t n) {
  std::vector<rootio::Column> cols;
  for (const SampleBranch& b : Branches()) {
    rootio::Column c;
    c.type = b.spec.type;
    c.first_entry = first;
    c.num_entries = n;
    c.jagged = !b.spec.count.empty() || b.spec.type == LeafType::kString;
    c.fixed_len = static_cast<uint32_t>(b.spec.len);
    if (c.jagged) {
      c.offsets.push_back(0);
    }
    for (int64_t e = first; e < first + n; ++e) {
      uint32_t k = b.fill(e, c);
      if (c.jagged) {
        c.offsets.push_back(c.offsets.back() + k);
      }
    }
    cols.push_back(std::move(c));
  }
  return cols;
}

Status WriteRntuple(const std::string& path,
                    const FileOptions& file_options,
                    const RntupleOptions& options,
                    int64_t entries,
                    int64_t batch) {
  auto file = FERRY_TRY(FileWriter::Create(path, file_options));
  RntupleWriter w(*file, options);
  for (const BranchSpec& s : RntupleBranches()) {
    FERRY_TRY(w.AddBranch(s));
  }
  for (int64_t first = 0; first < entries; first += batch) {
    std::vector<rootio::Column> cols = RntupleBatch(first, std::min(batch, entries - first));
    std::vector<const rootio::Column*> ptrs;
    ptrs.reserve(cols.size());
    for (const rootio::Column& c : cols) {
      ptrs.push_back(&c);
    }
    FERRY_TRY(w.WriteColumns(ptrs));
  }
  FERRY_TRY(w.Close());
  return file->Close();
}

namespace {

rootio::RntupleValue ValueAt(const rootio::Column& c, size_t k) {
  const uint8_t* p = c.bytes.data() + k * c.value_size();
  switch (c.type) {
    case LeafType::kBool:
      return rootio::RntupleValue::Bool(p[0] != 0);
    case LeafType::kFloat32:
      return rootio::RntupleValue::Float(LoadLE<float>(p));
    case LeafType::kFloat64:
      return rootio::RntupleValue::Real(LoadLE<double>(p));
    default:
      return rootio::IsSignedLeafType(c.type)
                 ? rootio::RntupleValue::Int(static_cast<int64_t>(LoadCount(c.type, p)))
                 : rootio::RntupleValue::UInt(LoadCount(c.type, p));
  }
}

}  // namespace

std::vector<rootio::RntupleValue> RntupleValuesOf(const rootio::Column& c, bool cardinality) {
  std::vector<rootio::RntupleValue> out;
  for (int64_t e = 0; e < c.num_entries; ++e) {
    auto [a, b] = c.EntryValues(e);
    if (c.type == LeafType::kString) {
      out.push_back(rootio::RntupleValue::String(std::string(c.StringAt(e))));
      continue;
    }
    if (!c.jagged && c.fixed_len == 1) {
      out.push_back(cardinality ? rootio::RntupleValue::UInt(
                        LoadCount(c.type, c.bytes.data() + a * c.value_size()))
                                : ValueAt(c, a));
      continue;
    }
    std::vector<rootio::RntupleValue> items;
    for (uint64_t k = a; k < b; ++k) {
      items.push_back(ValueAt(c, k));
    }
    out.push_back(rootio::RntupleValue::List(std::move(items)));
  }
  return out;
}

Status WriteRntupleFixtures(const std::string& dir, std::vector<std::string>* written) {
  const std::pair<const char*, const char*> fixtures[] = {
      {"none", "none"}, {"zlib", "zlib:6"}, {"lzma", "lzma:4"}, {"zstd", "zstd:5"}, {"lz4", "lz4"}};
  for (const auto& [name, codec] : fixtures) {
    RntupleOptions o;
    o.page_bytes = 1024;
    o.zipped_cluster_bytes = 16 << 10;
    const std::string path = dir + "/rntuple-" + name + ".root";
    FERRY_TRY(WriteRntuple(path, Fixed(*codec::Setting::Parse(codec)), o, 3000));
    written->push_back(path);
  }
  return OkStatus();
}

namespace {

// Why a top-level field is left out of the comparison, or "" for a scalar it keeps.
std::string SkipReason(const rootio::FieldRecord& f) {
  if (f.role != static_cast<uint16_t>(rootio::FieldRole::kLeaf)) {
    return f.type_name.empty() ? "untyped collection" : "collection (" + f.type_name + ")";
  }
  if (f.projected()) {
    return "projected (" + f.type_name + ")";
  }
  return "";
}

Status WriteNtupleValues(const rootio::RootFile& file, const std::string& name, JsonWriter& w) {
  auto r = FERRY_TRY(rootio::Rntuple::Open(file, name));
  w.BeginObject().Field("name", name).Field("entries", r->entries());
  std::vector<std::pair<std::string, std::string>> skipped;
  w.Key("fields").BeginObject();
  for (uint32_t id : r->TopLevelFields()) {
    const rootio::FieldRecord& f = r->fields()[id];
    if (std::string why = SkipReason(f); !why.empty()) {
      skipped.emplace_back(f.name, why);
      continue;
    }
    auto values = FERRY_TRY(r->Read(id, 0, r->entries()));
    w.Key(f.name).BeginObject().Field("type", f.type_name).Key("values").BeginArray();
    for (const rootio::RntupleValue& v : values) {
      v.WriteJson(w);
    }
    w.EndArray().EndObject();
  }
  w.EndObject().Key("skipped").BeginObject();
  for (const auto& [field, why] : skipped) {
    w.Field(field, why);
  }
  w.EndObject().EndObject();
  return OkStatus();
}

}  // namespace

Result<std::string> RntupleValuesJson(const std::string& path) {
  auto file = FERRY_TRY(rootio::RootFile::OpenPath(path));
  std::vector<std::string> names = FERRY_TRY(rootio::RntupleNames(*file));
  JsonWriter w;
  w.BeginObject().Key("ntuples").BeginArray();
  for (const std::string& name : names) {
    FERRY_TRY_CTX(WriteNtupleValues(*file, name, w), path);
  }
  w.EndArray().EndObject();
  return w.Take();
}

}  // namespace ferry::rootwrite::sample
