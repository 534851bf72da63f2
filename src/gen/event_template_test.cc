// LoadTemplate over an RNTuple (both formats are read through rootio::Dataset): the default
// template tree written as an RNTuple (the importer's layout) loads back to the same branches
// (names, types, counters, titles, every value), strings and fixed arrays included, and
// generating from it gives events as generating from the tree does.
#include "gen/event_template.h"

#include <map>

#include <gtest/gtest.h>

#include "gen/nanoaod_gen.h"
#include "gen/template_fixture.h"
#include "rootio/dataset.h"
#include "rootwrite/rntuple_writer.h"
#include "rootwrite/sample_rntuple.h"
#include "rootwrite/sample_tree.h"

namespace ferry::gen {
namespace {

// Writes the template's branches as the RNTuple "Events" of path.
Status WriteAsRntuple(const EventTemplate& t, const std::string& path) {
  auto file = FERRY_TRY(rootwrite::FileWriter::Create(path, {}));
  rootwrite::RntupleOptions o;
  o.description = t.tree_title;
  rootwrite::RntupleWriter w(*file, o);
  std::vector<const rootio::Column*> columns;
  for (const TemplateBranch& b : t.branches) {
    FERRY_TRY(w.AddBranch(b.spec));
    columns.push_back(&b.values);
  }
  FERRY_TRY(w.WriteColumns(columns));
  FERRY_TRY(w.Close());
  return file->Close();
}

using RntupleTemplate = TemplateTest;

TEST_F(RntupleTemplate, LoadsAsTheTreeItWasWrittenFrom) {
  testing::TempDir dir;
  const std::string path = dir.File("template.root");
  ASSERT_TRUE(WriteAsRntuple(tmpl_, path).has_value());
  auto loaded = LoadTemplate(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().ToString();
  EXPECT_EQ(loaded->entries, tmpl_.entries);
  EXPECT_EQ(loaded->tree_title, tmpl_.tree_title);
  EXPECT_TRUE(loaded->skipped.empty());
  ASSERT_EQ(loaded->branches.size(), tmpl_.branches.size());
  // The RNTuple puts scalars before collections: compare by name. Counters still precede the
  // branches they count.
  std::map<std::string, const TemplateBranch*> by_name;
  for (size_t i = 0; i < loaded->branches.size(); ++i) {
    const TemplateBranch& b = loaded->branches[i];
    by_name[b.spec.name] = &b;
    if (!b.spec.count.empty()) {
      EXPECT_LT(loaded->Find(b.spec.count), static_cast<int32_t>(i)) << b.spec.name;
    }
  }
  for (const TemplateBranch& want : tmpl_.branches) {
    ASSERT_TRUE(by_name.count(want.spec.name)) << want.spec.name;
    const TemplateBranch& got = *by_name[want.spec.name];
    EXPECT_EQ(std::tie(got.spec.type, got.spec.count, got.spec.title, got.spec.len),
              std::tie(want.spec.type, want.spec.count, want.spec.title, want.spec.len))
        << want.spec.name;
    EXPECT_EQ(got.values.offsets, want.values.offsets) << want.spec.name;
    EXPECT_TRUE(std::equal(got.values.bytes.begin(), got.values.bytes.end(),
                           want.values.bytes.begin(), want.values.bytes.end()))
        << want.spec.name;
  }
  EXPECT_EQ(loaded->run, loaded->Find("run"));
  EXPECT_GE(loaded->event, 0);
}

// Strings and fixed arrays too: the rootwrite sample (every type ferry writes) loads back to
// the columns it was written from.
TEST(RntupleTemplateSample, EveryShapeLoadsBack) {
  testing::TempDir dir;
  const std::string path = dir.File("sample.root");
  ASSERT_TRUE(rootwrite::sample::WriteRntuple(path, {}, {}, 300).has_value());
  auto loaded = LoadTemplate(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().ToString();
  const std::vector<rootwrite::BranchSpec> specs = rootwrite::sample::RntupleBranches();
  const std::vector<rootio::Column> cols = rootwrite::sample::RntupleBatch(0, 300);
  EXPECT_TRUE(loaded->skipped.empty());
  for (size_t i = 0; i < specs.size(); ++i) {
    int32_t at = loaded->Find(specs[i].name);
    ASSERT_GE(at, 0) << specs[i].name;
    const TemplateBranch& got = loaded->branches[static_cast<size_t>(at)];
    // A counter comes back as its cardinality's unsigned type (nJet was an Int_t).
    bool counter = false;
    for (const rootwrite::BranchSpec& s : specs) {
      counter = counter || s.count == specs[i].name;
    }
    const rootio::LeafType type = counter ? rootio::LeafType::kUInt32 : specs[i].type;
    EXPECT_EQ(std::tie(got.spec.type, got.spec.len, got.spec.count),
              std::tie(type, specs[i].len, specs[i].count))
        << specs[i].name;
    EXPECT_EQ(got.values.offsets, cols[i].offsets) << specs[i].name;
    EXPECT_TRUE(got.values.bytes == cols[i].bytes) << specs[i].name;
  }
}

TEST_F(RntupleTemplate, GeneratesFromAnRntupleTemplate) {
  testing::TempDir dir;
  const std::string path = dir.File("template.root");
  ASSERT_TRUE(WriteAsRntuple(tmpl_, path).has_value());
  GenOptions o;
  o.template_path = path;
  o.out_dir = dir.File("out");
  o.events = 500;
  o.format = OutputFormat::kRntuple;
  auto report = GenerateNanoAod(o);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->branches, tmpl_.branches.size());
  EXPECT_TRUE(report->agc.missing.empty());
  auto data = rootio::Dataset::OpenPath(report->files[0].path, "Events");
  ASSERT_TRUE(data.has_value()) << data.error().ToString();
  EXPECT_EQ((*data)->entries(), 500);
  rootio::Column jets;
  rootio::DatasetScratch scratch;
  ASSERT_TRUE((*data)->ReadInto((*data)->FindField("Jet_pt"), {0, 500}, &jets, &scratch));
  const size_t n = jets.num_values();
  EXPECT_GT(n, 500u);  // a few jets per event, drawn from the template's
}

}  // namespace
}  // namespace ferry::gen
