// Dataset over a real NanoAOD TTree and over an RNTuple of the same events (its columns written
// by RntupleWriter, several clusters): the same fields, shapes, counters, entries and values
// through both, whether a field is read whole (ReadInto) or cluster by cluster (ReadClusters);
// and over ROOT's own RNTuple (the importer's projected collections). Strings read alike from a
// TTree's string leaf and an RNTuple's std::string field.
#include "rootio/dataset.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rootwrite/file_writer.h"
#include "rootwrite/rntuple_writer.h"
#include "rootwrite/tree_writer.h"
#include "testing/testing.h"

namespace ferry::rootio {
namespace {

// The readable numeric fields of the sample: scalars, NanoAOD's counters and the jagged
// fields they count (one of every element type the file has).
const std::vector<std::string> kFields = {
    "run",     "event",        "nJet",   "Jet_pt",      "Jet_jetId",      "nMuon",
    "Muon_pt", "Muon_tightId", "MET_pt", "Muon_charge", "luminosityBlock"};

std::unique_ptr<Dataset> OpenOrDie(const std::string& path, std::string_view name) {
  auto d = Dataset::OpenPath(path, name);
  EXPECT_TRUE(d.has_value()) << d.error().ToString();
  return d.has_value() ? std::move(*d) : nullptr;
}

Column ReadWhole(const Dataset& d, const std::string& name) {
  DatasetScratch scratch;
  Column col;
  const int32_t id = d.FindField(name);
  EXPECT_GE(id, 0) << name;
  Status s = d.ReadInto(id, {0, d.entries()}, &col, &scratch);
  EXPECT_TRUE(s.has_value()) << name << ": " << s.error().ToString();
  return col;
}

// Appends src (covering the entries after dst's) to dst.
void Append(const Column& src, Column* dst) {
  if (dst->num_entries == 0 && dst->bytes.empty()) {
    *dst = src;
    return;
  }
  const uint64_t base = dst->offsets.empty() ? 0 : dst->offsets.back();
  if (src.jagged) {
    for (size_t i = 1; i < src.offsets.size(); ++i) {
      dst->offsets.push_back(base + src.offsets[i]);
    }
  }
  dst->bytes.insert(dst->bytes.end(), src.bytes.begin(), src.bytes.end());
  dst->num_entries += src.num_entries;
}

void ExpectSameValues(const Column& a, const Column& b, const std::string& what) {
  EXPECT_EQ(a.type, b.type) << what;
  EXPECT_EQ(a.jagged, b.jagged) << what;
  EXPECT_EQ(a.num_entries, b.num_entries) << what;
  EXPECT_EQ(a.offsets, b.offsets) << what;
  EXPECT_TRUE(std::equal(a.bytes.begin(), a.bytes.end(), b.bytes.begin(), b.bytes.end())) << what;
}

// The fields read unit by unit (vector reads of at most max_ranges ranges) equal whole reads.
void ExpectClustersEqualWhole(const Dataset& d,
                              const std::vector<std::string>& names,
                              uint32_t max_ranges) {
  auto reader = d.ReadClusters(names, {.max_ranges_per_read = max_ranges});
  ASSERT_TRUE(reader.has_value()) << reader.error().ToString();
  std::vector<Column> joined((*reader)->unit_count() > 0 ? names.size() : 0);
  DatasetScratch scratch;
  ByteVector buffer;
  std::vector<Column> columns;
  int64_t next = 0;
  for (size_t u = 0; u < (*reader)->unit_count(); ++u) {
    EXPECT_EQ((*reader)->UnitEntries(u).begin, next);
    next = (*reader)->UnitEntries(u).end;
    ASSERT_TRUE((*reader)->Fetch(u, &buffer).has_value());
    Status s = (*reader)->Decode(u, buffer, &scratch, &columns);
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    for (size_t k = 0; k < names.size(); ++k) {
      const int c = (*reader)->ColumnOf(names[k]);
      ASSERT_GE(c, 0) << names[k];
      Append(columns[static_cast<size_t>(c)], &joined[k]);
    }
  }
  EXPECT_EQ(next, d.entries());
  for (size_t k = 0; k < names.size(); ++k) {
    ExpectSameValues(joined[k], ReadWhole(d, names[k]), names[k] + " by clusters");
  }
}

// The TTree's kFields, counters before what they count, as an RNTuple of several clusters.
void WriteAsRntuple(const Dataset& tree, const std::string& path) {
  auto file = rootwrite::FileWriter::Create(path, {});
  ASSERT_TRUE(file.has_value()) << file.error().ToString();
  rootwrite::RntupleWriter out(
      **file,
      {.name = "Events", .zipped_cluster_bytes = 2 << 10, .page_bytes = 1024, .check_entries = 10});
  std::vector<Column> cols;
  std::vector<const Column*> ptrs;
  for (const std::string& name : kFields) {
    const FieldInfo& f = tree.Fields()[static_cast<size_t>(tree.FindField(name))];
    rootwrite::BranchSpec b{
        .name = name, .type = f.shape.type, .len = static_cast<int32_t>(f.shape.len)};
    if (f.shape.jagged) {
      b.count = tree.Fields()[static_cast<size_t>(f.counter)].name;
    }
    ASSERT_TRUE(out.AddBranch(b).has_value()) << name;
    cols.push_back(ReadWhole(tree, name));
  }
  ptrs.reserve(cols.size());
  for (const Column& c : cols) {
    ptrs.push_back(&c);
  }
  ASSERT_TRUE(out.WriteColumns(ptrs).has_value());
  ASSERT_TRUE(out.Close().has_value());
  ASSERT_TRUE((*file)->Close().has_value());
}

TEST(Dataset, TreeAndRntupleOfTheSameEventsReadAlike) {
  FERRY_REQUIRE_ROOT_DATA();
  std::unique_ptr<Dataset> tree =
      OpenOrDie(testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root"), "Events");
  ASSERT_NE(tree, nullptr);
  testing::TempDir dir;
  const std::string path = dir.File("ttbar_rntuple.root");
  WriteAsRntuple(*tree, path);
  std::unique_ptr<Dataset> ntuple = OpenOrDie(path, "Events");
  ASSERT_NE(ntuple, nullptr);
  ASSERT_EQ(ntuple->entries(), tree->entries());
  EXPECT_GT(ntuple->Clusters().size(), 2u) << ntuple->entries() << " entries";
  for (const std::string& name : kFields) {
    SCOPED_TRACE(name);
    const FieldShape t = tree->Shape(tree->FindField(name));
    const FieldShape r = ntuple->Shape(ntuple->FindField(name));
    EXPECT_EQ(t.type, r.type);
    EXPECT_EQ(t.jagged, r.jagged);
    EXPECT_EQ(t.len, r.len);
    ExpectSameValues(ReadWhole(*tree, name), ReadWhole(*ntuple, name), name);
  }
  // The counters are listed as such in both.
  for (const Dataset* d : {tree.get(), ntuple.get()}) {
    const std::vector<FieldInfo>& fields = d->Fields();
    auto find = [&](std::string_view name) {
      return std::find_if(fields.begin(), fields.end(),
                          [&](const FieldInfo& f) { return f.name == name; });
    };
    ASSERT_NE(find("Jet_pt"), fields.end());
    EXPECT_EQ(fields[static_cast<size_t>(find("Jet_pt")->counter)].name, "nJet");
    EXPECT_EQ(fields[static_cast<size_t>(find("Muon_pt")->counter)].name, "nMuon");
  }
  ExpectClustersEqualWhole(*tree, kFields, 1024);
  ExpectClustersEqualWhole(*ntuple, kFields, 3);
}

// 1,000 strings of 0 to 40 characters (some empty, some repeated) and an integer beside them.
std::vector<Column> StringBatch() {
  Column names{.type = LeafType::kString, .num_entries = 1000, .jagged = true};
  Column numbers{.type = LeafType::kInt32, .num_entries = 1000};
  names.offsets.push_back(0);
  for (int32_t i = 0; i < 1000; ++i) {
    std::string s = "event " + std::to_string(i * 7919 % 1000);
    s.resize(static_cast<size_t>(i % 41), static_cast<char>('a' + i % 26));
    names.bytes.insert(names.bytes.end(), s.begin(), s.end());
    names.offsets.push_back(names.bytes.size());
    const size_t at = numbers.bytes.size();
    numbers.bytes.resize(at + 4);
    std::memcpy(numbers.bytes.data() + at, &i, 4);
  }
  return {names, numbers};
}

// Writes the batch as "Events" of path with Writer (TreeWriter or RntupleWriter), in several
// clusters.
template <class Writer, class Options>
void WriteStrings(const std::string& path, Options options) {
  auto file = rootwrite::FileWriter::Create(path, {});
  ASSERT_TRUE(file.has_value()) << file.error().ToString();
  Writer out(**file, std::move(options));
  ASSERT_TRUE(out.AddBranch({.name = "name", .type = LeafType::kString}).has_value());
  ASSERT_TRUE(out.AddBranch({.name = "number", .type = LeafType::kInt32}).has_value());
  const std::vector<Column> batch = StringBatch();
  const Column* ptrs[] = {&batch[0], &batch[1]};
  ASSERT_TRUE(out.WriteColumns(ptrs).has_value());
  ASSERT_TRUE(out.Close().has_value());
  ASSERT_TRUE((*file)->Close().has_value());
}

TEST(Dataset, StringsReadAlikeFromATreeAndAnRntuple) {
  testing::TempDir dir;
  WriteStrings<rootwrite::TreeWriter>(dir.File("tree.root"),
                                      rootwrite::TreeOptions{.name = "Events", .auto_flush = 300});
  WriteStrings<rootwrite::RntupleWriter>(dir.File("rntuple.root"),
                                         rootwrite::RntupleOptions{.name = "Events",
                                                                   .zipped_cluster_bytes = 1 << 10,
                                                                   .page_bytes = 512,
                                                                   .check_entries = 10});
  std::unique_ptr<Dataset> tree = OpenOrDie(dir.File("tree.root"), "Events");
  std::unique_ptr<Dataset> ntuple = OpenOrDie(dir.File("rntuple.root"), "Events");
  ASSERT_TRUE(tree != nullptr && ntuple != nullptr);
  EXPECT_GT(ntuple->Clusters().size(), 2u);
  const std::vector<Column> want = StringBatch();
  for (const Dataset* d : {tree.get(), ntuple.get()}) {
    const int32_t id = d->FindField("name");
    ASSERT_GE(id, 0);
    // The first field in both: a TTree's first branch, an RNTuple's first field.
    const FieldInfo& f = d->Fields()[0];
    EXPECT_EQ(f.name, "name");
    EXPECT_EQ(f.id, id) << f.unreadable;
    // One string per entry: not jagged in its shape, as a TTree's string leaf.
    const FieldShape shape = d->Shape(id);
    EXPECT_EQ(shape.type, LeafType::kString);
    EXPECT_FALSE(shape.jagged);
    EXPECT_EQ(shape.len, 1u);
    ExpectSameValues(ReadWhole(*d, "name"), want[0], "name");
    ExpectSameValues(ReadWhole(*d, "number"), want[1], "number");
    // A range that starts and ends inside clusters.
    DatasetScratch scratch;
    Column part;
    ASSERT_TRUE(d->ReadInto(id, {123, 877}, &part, &scratch).has_value());
    ASSERT_EQ(part.num_entries, 754);
    for (int64_t i = 0; i < part.num_entries; ++i) {
      ASSERT_EQ(part.StringAt(i), want[0].StringAt(123 + i)) << i;
    }
    ExpectClustersEqualWhole(*d, {"name", "number"}, 2);
  }
}

TEST(Dataset, RootImporterRntuple) {
  if (testing::RntupleDataDir().empty()) {
    GTEST_SKIP() << "data/rntuple not present";
  }
  std::unique_ptr<Dataset> d = OpenOrDie(
      testing::RntupleDataFile("Run2012BC_DoubleMuParked_Muons_1000evts_rntuple_v1-0-0-0.root"),
      "Events");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->entries(), 1000);
  std::vector<std::string> names;
  for (const FieldInfo& f : d->Fields()) {
    EXPECT_GE(f.id, 0) << f.name << ": " << f.unreadable;
    names.push_back(f.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Muon_pt", "Muon_eta", "Muon_phi", "Muon_mass",
                                             "Muon_charge", "nMuon"}));
  const FieldInfo& pt = d->Fields()[0];
  EXPECT_TRUE(pt.shape.jagged);
  EXPECT_EQ(pt.shape.type, LeafType::kFloat32);
  EXPECT_EQ(pt.counter, 5);
  ExpectClustersEqualWhole(*d, names, 1024);
  // nMuon counts Muon_pt's values.
  const Column n = ReadWhole(*d, "nMuon");
  const Column values = ReadWhole(*d, "Muon_pt");
  EXPECT_EQ(n.value_size() == 4 ? n.num_entries : 0, 1000);
  EXPECT_EQ(values.offsets.back(), values.num_values());
}

TEST(Dataset, MissingNamesAreNotFound) {
  FERRY_REQUIRE_ROOT_DATA();
  auto none = Dataset::OpenPath(testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root"),
                                "NoSuchTree");
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), ErrorCode::kNotFound);
  std::unique_ptr<Dataset> d =
      OpenOrDie(testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root"), "Events");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->FindField("NoSuchField"), -1);
  auto reader = d->ReadClusters(std::vector<std::string>{"Jet_pt", "NoSuchField"});
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code(), ErrorCode::kNotFound);
}

// Every stored byte belongs to a unit; a jagged field costs its own unit, an RNTuple RVec also
// its collection's offsets (shared with the cardinality).
TEST(Dataset, StorageSurveyCoversTheFields) {
  FERRY_REQUIRE_ROOT_DATA();
  std::unique_ptr<Dataset> tree =
      OpenOrDie(testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root"), "Events");
  ASSERT_NE(tree, nullptr);
  testing::TempDir dir;
  const std::string path = dir.File("survey.root");
  WriteAsRntuple(*tree, path);
  std::unique_ptr<Dataset> ntuple = OpenOrDie(path, "Events");
  ASSERT_NE(ntuple, nullptr);
  for (const Dataset* d : {tree.get(), ntuple.get()}) {
    auto s = d->SurveyStorage();
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    ASSERT_EQ(s->uses.size(), s->fields.size());
    uint64_t total = 0;
    for (uint64_t b : s->unit_bytes) {
      total += b;
    }
    EXPECT_GT(total, 0u);
    for (const auto& use : s->uses) {
      EXPECT_EQ(use.size(), s->unit_bytes.size());
    }
  }
  auto s = ntuple->SurveyStorage();
  ASSERT_TRUE(s.has_value());
  const auto at = [&](std::string_view name) {
    return static_cast<size_t>(std::find(s->fields.begin(), s->fields.end(), name)
                               - s->fields.begin());
  };
  ASSERT_LT(at("Jet_pt"), s->fields.size());
  const auto& pt = s->uses[at("Jet_pt")];
  const auto& n = s->uses[at("nJet")];
  EXPECT_EQ(std::count(pt.begin(), pt.end(), true), 2);
  EXPECT_EQ(std::count(n.begin(), n.end(), true), 1);
}

}  // namespace
}  // namespace ferry::rootio
