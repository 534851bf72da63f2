// The RNTuple reader against the real files of data/rntuple (written by ROOT). Expected values
// come from independent sources only: jsroot's reading (jsroot-values.json, README there), the
// ROOT macros that wrote the files (scikit-hep-testdata's dev/make-root/rntuple_*.C), and
// uproot's tests of the same files.
#include "rootio/rntuple.h"

#include <algorithm>
#include <bit>
#include <bitset>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/endian.h"
#include "base/hash.h"
#include "io/local_source.h"
#include "testing/testing.h"

#include <nlohmann/json.hpp>

namespace ferry::rootio {
namespace {

using nlohmann::json;
using Values = std::vector<RntupleValue>;
using Kind = RntupleValue::Kind;

#define FERRY_REQUIRE_RNTUPLE_DATA()                  \
  do {                                                \
    if (::ferry::testing::RntupleDataDir().empty()) { \
      GTEST_SKIP() << "data/rntuple not present";     \
    }                                                 \
  } while (0)

struct Opened {
  std::unique_ptr<RootFile> file;
  std::unique_ptr<Rntuple> ntuple;
};

Opened Open(const std::string& file_name, const std::string& ntuple_name) {
  Opened o;
  auto f = RootFile::OpenPath(testing::RntupleDataFile(file_name));
  EXPECT_TRUE(f.has_value()) << f.error().ToString();
  if (!f.has_value()) {
    return o;
  }
  o.file = std::move(*f);
  auto r = Rntuple::Open(*o.file, ntuple_name);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  if (r.has_value()) {
    o.ntuple = std::move(*r);
  }
  return o;
}

Values ReadField(const Rntuple& r, const std::string& path, uint64_t first, uint64_t count) {
  auto id = r.FindField(path);
  EXPECT_TRUE(id.has_value()) << path;
  if (!id.has_value()) {
    return {};
  }
  auto v = r.Read(*id, first, count);
  EXPECT_TRUE(v.has_value()) << path << ": " << v.error().ToString();
  return v.has_value() ? std::move(*v) : Values{};
}

Values ReadAll(const Rntuple& r, const std::string& path) {
  return ReadField(r, path, 0, r.entries());
}

// Compact JSON of a range of values, to compare with expectations written as JSON.
std::string Json(const Values& values) {
  return RntupleValue::List(values).ToJson();
}

// Our value against jsroot's JSON value. jsroot prints 64-bit integers as doubles, so
// integers beyond 2^53 are compared after the same rounding.
bool SameAsJsroot(const RntupleValue& v, const json& j) {
  switch (v.kind) {
    case Kind::kBool:
      return j.is_boolean() && j.get<bool>() == (v.i != 0);
    case Kind::kInt:
      return j.is_number() && static_cast<double>(v.i) == j.get<double>();
    case Kind::kUInt:
      return j.is_number() && static_cast<double>(v.u) == j.get<double>();
    case Kind::kReal:
      // A float field holds floats: jsroot's double must round to the same one.
      if (v.single) {
        return j.is_number() && static_cast<float>(v.d) == static_cast<float>(j.get<double>());
      }
      return j.is_number() && v.d == j.get<double>();
    case Kind::kString:
      return j.is_string() && j.get<std::string>() == v.s;
    case Kind::kList:
      if (!j.is_array() || j.size() != v.items.size()) {
        return false;
      }
      for (size_t k = 0; k < v.items.size(); ++k) {
        if (!SameAsJsroot(v.items[k], j[k])) {
          return false;
        }
      }
      return true;
    default:
      return false;
  }
}

json LoadJsroot() {
  std::ifstream in(testing::RntupleDataFile("jsroot-values.json"));
  return json::parse(in);
}

// Where data/rntuple/README.md (or the spec) says jsroot is wrong; each case has a test of
// its own below that asserts the spec's values.
const std::set<std::string> kJsrootWrongFields = {
    // Projected RVec fields: jsroot returns the flattened collection's first elements.
    "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root/Events/Muon_pt",
    "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root/Events/Muon_eta",
    "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root/Events/Muon_phi",
    "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root/Events/Muon_mass",
    "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root/Events/Muon_charge",
    // A deferred column: jsroot reads its first page as entry 0; the spec says entries before
    // the column's first element are zeros.
    "test_extension_columns_rntuple_v1-0-0-0.root/ntuple/float_field",
    // 32-bit Real32Quant: jsroot's 32-bit integer arithmetic overflows (it gives +-Infinity).
    "test_float_types_rntuple_v1-0-0-0.root/ntuple/quant32",
};
// jsroot counts the entries of the first cluster group only.
const std::set<std::string> kJsrootWrongEntries = {
    "test_multiple_cluster_groups_rntuple_v1-0-0-0.root/ntuple",
};

TEST(Rntuple, EveryFileOpensAndEveryFieldReads) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  auto files = testing::AllRntupleDataFiles();
  ASSERT_EQ(files.size(), 23u);
  size_t ntuples = 0;
  size_t fields = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto f = RootFile::OpenPath(path);
    ASSERT_TRUE(f.has_value()) << f.error().ToString();
    auto names = RntupleNames(**f);
    ASSERT_TRUE(names.has_value()) << names.error().ToString();
    ASSERT_FALSE(names->empty());
    for (const std::string& name : *names) {
      auto r = Rntuple::Open(**f, name);
      ASSERT_TRUE(r.has_value()) << name << ": " << r.error().ToString();
      ++ntuples;
      // The hundred-million-entry file: its last page is enough.
      uint64_t first = (*r)->entries() > 100000 ? (*r)->entries() - 1000 : 0;
      for (uint32_t id : (*r)->TopLevelFields()) {
        auto v = (*r)->Read(id, first, (*r)->entries() - first);
        ASSERT_TRUE(v.has_value()) << v.error().ToString();
        EXPECT_EQ(v->size(), (*r)->entries() - first);
        ++fields;
      }
    }
  }
  EXPECT_EQ(ntuples, 24u);  // the multiple-rntuples file holds two
  EXPECT_GT(fields, 0u);
}

// FindField compares paths name by name without building them (PathIs): every field of every
// sample file is found by its own path (the first field of that path where names repeat), and
// the near misses — a path cut short, a dot too many or too few — find nothing.
TEST(Rntuple, EveryFieldIsFoundByItsPathAndNearMissesAreNot) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  size_t checked = 0;
  for (const std::string& path : testing::AllRntupleDataFiles()) {
    SCOPED_TRACE(path);
    auto f = RootFile::OpenPath(path);
    ASSERT_TRUE(f.has_value()) << f.error().ToString();
    auto names = RntupleNames(**f);
    ASSERT_TRUE(names.has_value()) << names.error().ToString();
    for (const std::string& name : *names) {
      auto r = Rntuple::Open(**f, name);
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      std::map<std::string, uint32_t> first_of;
      for (uint32_t id = 0; id < (*r)->fields().size(); ++id) {
        first_of.emplace((*r)->FieldPath(id), id);
      }
      for (const auto& [field_path, id] : first_of) {
        auto found = (*r)->FindField(field_path);
        ASSERT_TRUE(found.has_value()) << field_path;
        EXPECT_EQ(*found, id) << field_path;
        for (const std::string& miss :
             {field_path + ".", "." + field_path, field_path + "x", field_path.substr(1)}) {
          if (first_of.count(miss) == 0) {
            EXPECT_FALSE((*r)->FindField(miss).has_value()) << miss;
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100u);
}

TEST(Rntuple, SimpleFieldsMatchJsroot) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  json all = LoadJsroot();
  size_t compared = 0;
  for (const auto& [file_name, ntuples] : all.items()) {
    for (const auto& [ntuple_name, info] : ntuples.items()) {
      SCOPED_TRACE(file_name + "/" + ntuple_name);
      Opened o = Open(file_name, ntuple_name);
      ASSERT_NE(o.ntuple, nullptr);
      if (kJsrootWrongEntries.count(file_name + "/" + ntuple_name) == 0) {
        EXPECT_EQ(o.ntuple->entries(), info["entries"].get<uint64_t>());
      }
      // jsroot lists every top-level field, as read or as skipped.
      std::set<std::string> theirs;
      for (const auto& [field, values] : info["fields"].items()) {
        theirs.insert(field);
      }
      for (const auto& [field, why] : info["skipped"].items()) {
        theirs.insert(field);
      }
      std::set<std::string> names;
      for (uint32_t id : o.ntuple->TopLevelFields()) {
        names.insert(o.ntuple->fields()[id].name);
      }
      EXPECT_EQ(names, theirs);
      auto n = info["n"].get<uint64_t>();
      for (const auto& [field, values] : info["fields"].items()) {
        if (kJsrootWrongFields.count(file_name + "/" + ntuple_name + "/" + field) != 0) {
          continue;
        }
        Values ours = ReadField(*o.ntuple, field, 0, n);
        ASSERT_EQ(ours.size(), values.size()) << field;
        for (size_t i = 0; i < ours.size(); ++i) {
          EXPECT_TRUE(SameAsJsroot(ours[i], values[i]))
              << field << "[" << i << "]: ours " << ours[i].ToJson() << ", jsroot "
              << values[i].dump();
        }
        auto id = o.ntuple->FindField(field);
        ASSERT_TRUE(id.has_value());
        EXPECT_EQ(o.ntuple->fields()[*id].type_name, info["types"][field].get<std::string>());
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 50u);
}

// RNTupleImporter's projected RVec fields, per entry: each entry's list is as long as nMuon
// says, and the lists laid end to end are the collection's items, which jsroot lists first.
TEST(Rntuple, ProjectedFieldsFollowTheirCardinality) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  const std::string file = "Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root";
  Opened o = Open(file, "Events");
  ASSERT_NE(o.ntuple, nullptr);
  json flat = LoadJsroot()[file]["Events"]["fields"];
  Values n_muon = ReadAll(*o.ntuple, "nMuon");
  ASSERT_EQ(n_muon.size(), 1000u);
  uint64_t total = 0;
  for (const char* field : {"Muon_pt", "Muon_eta", "Muon_phi", "Muon_mass", "Muon_charge"}) {
    SCOPED_TRACE(field);
    Values lists = ReadAll(*o.ntuple, field);
    ASSERT_EQ(lists.size(), 1000u);
    std::vector<RntupleValue> items;
    total = 0;
    for (size_t e = 0; e < lists.size(); ++e) {
      ASSERT_EQ(lists[e].kind, Kind::kList);
      ASSERT_EQ(lists[e].items.size(), n_muon[e].u) << "entry " << e;
      total += n_muon[e].u;
      items.insert(items.end(), lists[e].items.begin(), lists[e].items.end());
    }
    for (size_t k = 0; k < flat[field].size(); ++k) {
      EXPECT_TRUE(SameAsJsroot(items[k], flat[field][k])) << k;
    }
  }
  // A member of the untyped collection's records, per entry, is the projected field.
  EXPECT_EQ(Json(ReadAll(*o.ntuple, "_collection0._0.Muon_pt")),
            Json(ReadAll(*o.ntuple, "Muon_pt")));
  // The untyped collection the projections come from holds the same items as records.
  Values records = ReadAll(*o.ntuple, "_collection0");
  uint64_t record_items = 0;
  for (const RntupleValue& r : records) {
    record_items += r.items.size();
  }
  EXPECT_EQ(record_items, total);
  EXPECT_EQ(records[0].items[0].Member("Muon_pt")->d, flat["Muon_pt"][0].get<double>());
}

// rntuple_extension_columns.C: int_field = i three times over 0..199; float_field added after
// 200 entries (i + 0.5), intvec_field after 400 ({i, i + 1}); before, the spec's zeros.
TEST(Rntuple, SchemaExtensionReadsZerosBeforeADeferredColumn) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_extension_columns_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  ASSERT_EQ(o.ntuple->entries(), 600u);
  EXPECT_EQ(o.ntuple->header().schema.fields.size(), 1u);  // the rest is in the footer
  EXPECT_GE(o.ntuple->clusters().size(), 2u);
  Values ints = ReadAll(*o.ntuple, "int_field");
  Values floats = ReadAll(*o.ntuple, "float_field");
  Values vecs = ReadAll(*o.ntuple, "intvec_field");
  ASSERT_EQ(vecs.size(), 600u);
  for (size_t e = 0; e < 600; ++e) {
    int i = static_cast<int>(e % 200);
    EXPECT_EQ(ints[e].i, i) << e;
    EXPECT_EQ(floats[e].d, e >= 200 ? i + 0.5 : 0.0) << e;
    EXPECT_EQ(vecs[e].ToJson(),
              e >= 400 ? Json({RntupleValue::Int(i), RntupleValue::Int(i + 1)}) : "[]")
        << e;
  }
  // A range that starts inside the zeros and ends in the written part.
  Values tail = ReadField(*o.ntuple, "intvec_field", 398, 4);
  EXPECT_EQ(Json(tail), "[[],[],[0,1],[1,2]]");
}

// rntuple_multiple_cluster_groups.C: 1000 entries, clusters every 100 plus at 450 and 750,
// which also close cluster groups; one = i, int_vector = {i, i + 1}.
TEST(Rntuple, MultipleClusterGroups) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_multiple_cluster_groups_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  EXPECT_EQ(o.ntuple->entries(), 1000u);
  EXPECT_EQ(o.ntuple->cluster_groups(), 3u);
  std::vector<uint64_t> firsts;
  for (const ClusterInfo& c : o.ntuple->clusters()) {
    firsts.push_back(c.first_entry);
  }
  EXPECT_EQ(firsts,
            (std::vector<uint64_t>{0, 100, 200, 300, 400, 450, 500, 600, 700, 750, 800, 900}));
  Values one = ReadAll(*o.ntuple, "one");
  Values vec = ReadAll(*o.ntuple, "int_vector");
  ASSERT_EQ(vec.size(), 1000u);
  for (int64_t e = 0; e < 1000; ++e) {
    auto at = static_cast<size_t>(e);
    EXPECT_EQ(one[at].i, e);
    EXPECT_EQ(vec[at].ToJson(), Json({RntupleValue::Int(e), RntupleValue::Int(e + 1)})) << e;
  }
  // A range across two cluster groups.
  Values mid = ReadField(*o.ntuple, "int_vector", 449, 2);
  EXPECT_EQ(Json(mid), "[[449,450],[450,451]]");
}

// rntuple_multiple_representations.C: "real" stored as Real32 and Real16; cluster 1 uses the
// second representation, the others the first. Values 1, 2, 3.
TEST(Rntuple, ColumnRepresentationsChangePerCluster) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_multiple_representations_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  auto id = o.ntuple->FindField("real");
  ASSERT_TRUE(id.has_value());
  ASSERT_EQ(o.ntuple->RepresentationCount(*id), 2u);
  ASSERT_EQ(o.ntuple->clusters().size(), 3u);
  uint32_t real32 = o.ntuple->Representation(*id, 0)[0];
  uint32_t real16 = o.ntuple->Representation(*id, 1)[0];
  EXPECT_EQ(o.ntuple->columns()[real16].type, static_cast<uint16_t>(ColumnType::kReal16));
  EXPECT_TRUE(o.ntuple->clusters()[1].columns[real32].suppressed);
  EXPECT_FALSE(o.ntuple->clusters()[1].columns[real16].suppressed);
  EXPECT_TRUE(o.ntuple->clusters()[0].columns[real16].suppressed);
  EXPECT_EQ(Json(ReadAll(*o.ntuple, "real")), "[1,2,3]");
}

// rntuple_index_multicluster.C: {i, i + j} for j = 0, 1 and i = 0..99, over three clusters.
TEST(Rntuple, IndexColumnsRestartInEveryCluster) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_index_multicluster_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  EXPECT_EQ(o.ntuple->clusters().size(), 3u);
  Values v = ReadAll(*o.ntuple, "int_vector");
  ASSERT_EQ(v.size(), 200u);
  for (int64_t e = 0; e < 200; ++e) {
    EXPECT_EQ(v[static_cast<size_t>(e)].ToJson(),
              Json({RntupleValue::Int(e % 100), RntupleValue::Int(e % 100 + e / 100)}))
        << e;
  }
  // Ranges that start in the middle of a cluster and end in the next one.
  for (uint64_t first : {80u, 85u, 86u, 171u, 172u}) {
    Values part = ReadField(*o.ntuple, "int_vector", first, 20);
    for (size_t k = 0; k < part.size(); ++k) {
      EXPECT_EQ(part[k].ToJson(), v[first + k].ToJson()) << first << "+" << k;
    }
  }
}

// uproot's test_rntuple_stl_containers and rntuple_stl_containers.C: entry e (1..5) holds
// e-based values in every container.
TEST(Rntuple, StlContainers) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_stl_containers_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  const Rntuple& r = *o.ntuple;
  EXPECT_EQ(Json(ReadAll(r, "string")), R"(["one","two","three","four","five"])");
  EXPECT_EQ(Json(ReadField(r, "vector_int32", 0, 2)), "[[1],[1,2]]");
  EXPECT_EQ(Json(ReadField(r, "vector_vector_int32", 0, 2)), "[[[1]],[[1],[2]]]");
  EXPECT_EQ(Json(ReadField(r, "vector_string", 0, 2)), R"([["one"],["one","two"]])");
  EXPECT_EQ(Json(ReadField(r, "vector_vector_string", 4, 1)),
            R"([[["one"],["two"],["three"],["four"],["five"]]])");
  Values variant = ReadField(r, "variant_int32_string", 0, 2);
  ASSERT_EQ(variant.size(), 2u);
  EXPECT_EQ(variant[0].ToJson(), "1");
  EXPECT_EQ(variant[1].ToJson(), R"("two")");
  Values vv = ReadField(r, "vector_variant_int64_string", 0, 2);
  ASSERT_EQ(vv.size(), 2u);
  EXPECT_EQ(vv[0].ToJson(), R"(["one"])");
  ASSERT_EQ(vv[1].items.size(), 2u);
  EXPECT_EQ(vv[1].items[0].ToJson(), R"("one")");
  EXPECT_EQ(vv[1].items[1].kind, Kind::kInt);
  EXPECT_EQ(vv[1].items[1].i, 2);
  EXPECT_EQ(Json(ReadAll(r, "tuple_int32_string")),
            R"([{"_0":1,"_1":"one"},{"_0":2,"_1":"two"},{"_0":3,"_1":"three"},)"
            R"({"_0":4,"_1":"four"},{"_0":5,"_1":"five"}])");
  EXPECT_EQ(Json(ReadAll(r, "pair_int32_string")), Json(ReadAll(r, "tuple_int32_string")));
  EXPECT_EQ(Json(ReadField(r, "vector_tuple_int32_string", 1, 1)),
            R"([[{"_0":1,"_1":"one"},{"_0":2,"_1":"two"}]])");
  EXPECT_EQ(Json(ReadAll(r, "array_float")), "[[1,1,1],[2,2,2],[3,3,3],[4,4,4],[5,5,5]]");
  Values lv = ReadAll(r, "array_lv");
  ASSERT_EQ(lv.size(), 5u);
  for (size_t e = 0; e < 5; ++e) {
    ASSERT_EQ(lv[e].items.size(), 3u);
    for (const RntupleValue& item : lv[e].items) {
      for (const char* m : {"pt", "eta", "phi", "mass"}) {
        ASSERT_NE(item.Member(m), nullptr);
        EXPECT_EQ(item.Member(m)->d, static_cast<double>(e + 1));
      }
    }
  }
}

// rntuple_nested_structs.C: i, i + 1, i + 2 and {i, i + 1} down three levels.
TEST(Rntuple, NestedRecords) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_nested_structs_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  Values v = ReadAll(*o.ntuple, "my_struct");
  ASSERT_EQ(v.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    std::string want = "{\"i\":" + std::to_string(i)
                       + ",\"sub_struct\":{\"i\":" + std::to_string(i + 1)
                       + ",\"sub_sub_struct\":{\"i\":" + std::to_string(i + 2) + ",\"v\":["
                       + std::to_string(i) + "," + std::to_string(i + 1) + "]}}}";
    EXPECT_EQ(v[i].ToJson(), want);
  }
  // A subfield reads on its own, to the same values.
  Values sub = ReadAll(*o.ntuple, "my_struct.sub_struct.sub_sub_struct.v");
  EXPECT_EQ(sub[9].ToJson(), "[9,10]");
  EXPECT_EQ(Json(ReadField(*o.ntuple, "my_struct.sub_struct.sub_sub_struct.v._0", 8, 2)),
            "[[8,9],[9,10]]");
}

// rntuple_int_vfloat_tlv_vtlv.C: a record and a vector of records that grows by entry.
TEST(Rntuple, VectorsOfRecords) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_int_vfloat_tlv_vtlv_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  auto lv = [](int x) {
    std::string s = std::to_string(x);
    return "{\"pt\":" + s + ",\"eta\":" + s + ",\"phi\":" + s + ",\"mass\":" + s + "}";
  };
  Values three = ReadAll(*o.ntuple, "three_LV");
  EXPECT_EQ(Json(three),
            "[" + lv(19) + "," + lv(18) + "," + lv(17) + "," + lv(17) + "," + lv(16) + "]");
  // The vector is never cleared after the first entry: 4, 7, 9, 10 and 10 items.
  std::vector<int> items = {19, 19, 19, 19, 18, 18, 18, 17, 17, 17};
  Values four = ReadAll(*o.ntuple, "four_v_LVs");
  EXPECT_EQ(Json(ReadField(*o.ntuple, "four_v_LVs._0.eta", 2, 1)),
            "[[19,19,19,19,18,18,18,17,17]]");
  std::vector<size_t> sizes = {4, 7, 9, 10, 10};
  ASSERT_EQ(four.size(), 5u);
  for (size_t e = 0; e < 5; ++e) {
    std::string want = "[";
    for (size_t k = 0; k < sizes[e]; ++k) {
      want += (k > 0 ? "," : "") + lv(items[k]);
    }
    EXPECT_EQ(four[e].ToJson(), want + "]") << e;
  }
}

// rntuple_class_inheritance.C: base classes are subfields ":_0", ":_1".
TEST(Rntuple, BaseClassesAreSubfields) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_class_inheritance_rntuple_v1-0-0-1.root", "rntpl");
  ASSERT_NE(o.ntuple, nullptr);
  Values v = ReadAll(*o.ntuple, "multi_grandparent");
  ASSERT_EQ(v.size(), 10u);
  for (int64_t i = 0; i < 10; ++i) {
    const RntupleValue& mgp = v[static_cast<size_t>(i)];
    const RntupleValue* child = mgp.Member(":_0");
    const RntupleValue* multi = mgp.Member(":_1");
    ASSERT_NE(child, nullptr);
    ASSERT_NE(multi, nullptr);
    EXPECT_EQ(child->Member(":_0")->Member("base_a1")->i, i);
    EXPECT_EQ(child->Member(":_0")->Member("base_a2")->d, static_cast<double>(i) * 0.1);
    EXPECT_EQ(child->Member(":_0")->Member("base_a3")->ToJson(),
              Json({RntupleValue::Int(0), RntupleValue::Int(i), RntupleValue::Int(2 * i)}));
    EXPECT_EQ(child->Member("child_1")->i, 2 * i);
    EXPECT_EQ(multi->Member(":_1")->Member("base_b")->d, static_cast<double>(i) * 10.0);
    EXPECT_EQ(multi->Member("multi_parent_2")->d, static_cast<double>(i) * 40.0);
    EXPECT_EQ(mgp.Member("multi_grand_parent1")->i, 5 * i);
    EXPECT_EQ(mgp.Member("multi_grand_parent2")->d, static_cast<double>(i) * 50.0);
  }
  Values gc = ReadAll(*o.ntuple, "grandchild");
  EXPECT_EQ(gc[3].Member("grandchild_2")->d, 90.0);
}

// rntuple_atomic_bitset.C: an atomic wraps its value; a bitset<42> is 42 bools, least
// significant bit first.
TEST(Rntuple, AtomicsAndBitsets) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_atomic_bitset_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  EXPECT_EQ(Json(ReadAll(*o.ntuple, "atomic_int")), "[1,2,3]");
  std::bitset<42> bits(42);
  std::vector<std::bitset<42>> want = {bits};
  bits |= 0b1010101010101010;
  want.push_back(bits);
  bits &= 0b1100110011001100;
  want.push_back(bits);
  Values v = ReadAll(*o.ntuple, "bitset");
  ASSERT_EQ(v.size(), 3u);
  for (size_t e = 0; e < 3; ++e) {
    ASSERT_EQ(v[e].items.size(), 42u);
    for (size_t b = 0; b < 42; ++b) {
      EXPECT_EQ(v[e].items[b].i != 0, want[e][b]) << e << " bit " << b;
    }
  }
}

// rntuple_emptystruct_invalidvar.C: an empty record, and a variant that is valueless in
// entry 1 (tag 0: null).
TEST(Rntuple, EmptyRecordsAndValuelessVariants) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_emptystruct_invalidvar_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  EXPECT_EQ(Json(ReadAll(*o.ntuple, "empty_struct")), "[{},{},{}]");
  EXPECT_EQ(Json(ReadAll(*o.ntuple, "variant")), R"([1,null,{"i":2}])");
}

// rntuple_float_types.C: the same four floats written as Real32Trunc (keeping the top N bits)
// and as Real32Quant over [-2, 3] (N-bit steps of 5 / (2^N - 1)).
TEST(Rntuple, TruncatedAndQuantizedFloats) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_float_types_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  const std::vector<float> to_trunc = {1.23456789f, 1.4660155e13f, -6.2875986e-22f, -1.9060668f};
  const std::vector<float> written = {1.23456789f, 1.6666666f, -6.2875986e-22f, -1.9060668f};
  for (int bits : {10, 16, 24, 31}) {
    Values v = ReadAll(*o.ntuple, "trunc" + std::to_string(bits));
    ASSERT_EQ(v.size(), 4u);
    uint32_t mask = ~((uint32_t{1} << (32 - bits)) - 1);
    for (size_t e = 0; e < 4; ++e) {
      float want = std::bit_cast<float>(std::bit_cast<uint32_t>(to_trunc[e]) & mask);
      EXPECT_EQ(v[e].d, static_cast<double>(want)) << bits << " bits, entry " << e;
    }
  }
  for (int bits : {1, 8, 16, 20, 24, 25, 32}) {
    Values v = ReadAll(*o.ntuple, "quant" + std::to_string(bits));
    ASSERT_EQ(v.size(), 4u);
    double step = 5.0 / (std::ldexp(1.0, bits) - 1);
    for (size_t e = 0; e < 4; ++e) {
      // Half a step, and the rounding to float of the value read.
      EXPECT_NEAR(v[e].d, written[e], step / 2 + 2.5e-7) << bits << " bits, entry " << e;
    }
  }
}

TEST(Rntuple, FieldTreeUsesRootTypeNames) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root", "Events");
  ASSERT_NE(o.ntuple, nullptr);
  std::map<std::string, std::string> types;
  for (uint32_t id : o.ntuple->TopLevelFields()) {
    types[o.ntuple->fields()[id].name] = o.ntuple->fields()[id].type_name;
  }
  EXPECT_EQ(types["Muon_pt"], "ROOT::VecOps::RVec<float>");
  EXPECT_EQ(types["Muon_charge"], "ROOT::VecOps::RVec<std::int32_t>");
  EXPECT_EQ(types["nMuon"], "ROOT::RNTupleCardinality<std::uint32_t>");
  EXPECT_EQ(types["_collection0"], "");  // an untyped collection
  auto pt = o.ntuple->FindField("_collection0._0.Muon_pt");
  ASSERT_TRUE(pt.has_value());
  EXPECT_EQ(o.ntuple->FieldPath(*pt), "_collection0._0.Muon_pt");
  EXPECT_EQ(o.ntuple->anchor().Version(), "1.0.0.0");
}

// Rewrites an uncompressed envelope's checksum after its bytes were changed.
void Reseal(std::vector<uint8_t>& file, uint64_t at, uint64_t length) {
  StoreLE<uint64_t>(file.data() + at + length - 8, hash::Xxh3(file.data() + at, length - 8));
}

// The spec's forward compatibility: a column type from a newer format makes its top-level
// field unreadable, not the RNTuple. lastName's Char column is given type 0x7F, and every
// checksum that covers it (header; the header checksum in footer and page list) resealed.
TEST(Rntuple, UnknownColumnTypesMakeOnlyTheirFieldUnreadable) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  const std::string name = "rntviewer-testfile-uncomp-single-rntuple-v1-0-0-0.root";
  Opened o = Open(name, "Contributors");
  ASSERT_NE(o.ntuple, nullptr);
  const Anchor& a = o.ntuple->anchor();
  const EnvelopeLink& list = o.ntuple->footer().groups[0].page_list;
  ASSERT_EQ(a.nbytes_header, a.len_header);  // stored uncompressed
  ASSERT_EQ(a.nbytes_footer, a.len_footer);
  ASSERT_EQ(list.locator.size, list.length);
  auto bytes = testing::ReadWholeFile(testing::RntupleDataFile(name));
  // Column record: type Char (2), 8 bits, field 1 (lastName).
  const std::vector<uint8_t> record = {0x02, 0x00, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00};
  auto header = bytes.begin() + static_cast<ptrdiff_t>(a.seek_header);
  auto at = std::search(header, header + static_cast<ptrdiff_t>(a.len_header), record.begin(),
                        record.end());
  ASSERT_NE(at, header + static_cast<ptrdiff_t>(a.len_header));
  *at = 0x7F;
  Reseal(bytes, a.seek_header, a.len_header);
  uint64_t checksum = LoadLE<uint64_t>(bytes.data() + a.seek_header + a.len_header - 8);
  StoreLE<uint64_t>(bytes.data() + a.seek_footer + 16, checksum);  // after preamble and flags
  Reseal(bytes, a.seek_footer, a.len_footer);
  StoreLE<uint64_t>(bytes.data() + list.locator.offset + 8, checksum);
  Reseal(bytes, list.locator.offset, list.length);

  io::MemorySource src(std::move(bytes), name);
  auto f = RootFile::Open(src);
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  auto r = Rntuple::Open(**f, "Contributors");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Json(ReadAll(**r, "firstName")), Json(ReadAll(*o.ntuple, "firstName")));
  auto id = (*r)->FindField("lastName");
  ASSERT_TRUE(id.has_value());
  auto last = (*r)->Read(*id, 0, 1);
  ASSERT_FALSE(last.has_value());
  EXPECT_EQ(last.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(last.error().message().find("field 'lastName': column 3 has type 127"),
            std::string::npos)
      << last.error().message();
}

TEST(Rntuple, BadRequestsAreErrors) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_int_float_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  auto missing = o.ntuple->FindField("no_such_field");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  auto past = o.ntuple->Read(0, 5, 6);
  ASSERT_FALSE(past.has_value());
  EXPECT_EQ(past.error().code(), ErrorCode::kInvalidArgument);
  auto none = Rntuple::Open(*o.file, "nope");
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), ErrorCode::kNotFound);
}

// rntuple_int_multicluster.C: 50,000,000 entries of 2, then as many of 1, in 191 pages;
// entries far in are found through the page list.
TEST(Rntuple, ManyPagesAreReachedDirectly) {
  FERRY_REQUIRE_RNTUPLE_DATA();
  Opened o = Open("test_int_multicluster_rntuple_v1-0-0-0.root", "ntuple");
  ASSERT_NE(o.ntuple, nullptr);
  ASSERT_EQ(o.ntuple->entries(), 100000000u);
  EXPECT_EQ(Json(ReadField(*o.ntuple, "one_integers", 49999999, 2)), "[2,1]");
  EXPECT_EQ(Json(ReadField(*o.ntuple, "one_integers", 99999998, 2)), "[1,1]");
}

}  // namespace
}  // namespace ferry::rootio
