#include "gen/nanoaod_gen.h"

#include <tuple>

#include <gtest/gtest.h>

#include "rootio/rntuple.h"
#include "rootio/root_file.h"
#include "rootwrite/sample_rntuple.h"
#include "testing/testing.h"

namespace ferry::gen {
namespace {

GenOptions Small(const std::string& out) {
  GenOptions o;
  o.template_path = testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root");
  o.out_dir = out;
  o.events = 1001;
  o.files = 2;
  o.codec = {codec::Algorithm::kZstd, 3};
  o.seed = 4;
  o.batch_events = 300;
  return o;
}

TEST(GenerateNanoAod, WritesTheTemplateSchemaWithOrderedEventIds) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir dir;
  GenOptions o = Small(dir.path() + "/out");
  int64_t last_progress = 0;
  auto report = GenerateNanoAod(o, [&](const GenProgress& p) {
    EXPECT_GT(p.events, last_progress);
    last_progress = p.events;
  });
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(last_progress, 1001);
  ASSERT_EQ(report->files.size(), 2u);
  EXPECT_EQ(report->files[0].events, 501);
  EXPECT_EQ(report->files[1].events, 500);
  EXPECT_EQ(report->events, 1001);
  EXPECT_EQ(report->branches, 947u);
  EXPECT_EQ(report->agc.branches.size(), 18u);
  EXPECT_TRUE(report->agc.missing.empty());
  EXPECT_GT(report->agc.fraction, 0.01);
  EXPECT_LT(report->agc.fraction, 0.2);

  auto tmpl = rootio::RootFile::OpenPath(o.template_path);
  ASSERT_TRUE(tmpl.has_value());
  auto tt = (*tmpl)->OpenTree("Events");
  ASSERT_TRUE(tt.has_value());
  std::tuple<uint32_t, uint32_t, uint64_t> prev{0, 0, 0};
  for (const GenFile& gf : report->files) {
    auto f = rootio::RootFile::OpenPath(gf.path);
    ASSERT_TRUE(f.has_value()) << f.error().ToString();
    auto t = (*f)->OpenTree("Events");
    ASSERT_TRUE(t.has_value()) << t.error().ToString();
    EXPECT_EQ((*t)->entries(), gf.events);
    // Same branch names, types, titles and counters as the template.
    const rootio::TreeInfo& a = (*t)->info();
    const rootio::TreeInfo& b = (*tt)->info();
    ASSERT_EQ(a.branches.size(), b.branches.size());
    for (const rootio::Branch& br : b.branches) {
      int32_t i = a.FindBranch(br.name);
      ASSERT_GE(i, 0) << br.name;
      const rootio::Leaf& la =
          a.leaves[static_cast<size_t>(a.branches[static_cast<size_t>(i)].leaves[0])];
      const rootio::Leaf& lb = b.leaves[static_cast<size_t>(br.leaves[0])];
      EXPECT_EQ(la.type, lb.type) << br.name;
      if (!br.title.empty()) {  // an empty title gets ROOT's default leaf list
        EXPECT_EQ(a.branches[static_cast<size_t>(i)].title, br.title);
      }
      EXPECT_EQ(la.jagged(), lb.jagged()) << br.name;
      if (lb.jagged()) {
        EXPECT_EQ(a.leaves[static_cast<size_t>(la.count_leaf)].name,
                  b.leaves[static_cast<size_t>(lb.count_leaf)].name);
      }
    }
    auto run = (*t)->ReadLeaf("run", (*t)->All());
    auto lumi = (*t)->ReadLeaf("luminosityBlock", (*t)->All());
    auto event = (*t)->ReadLeaf("event", (*t)->All());
    ASSERT_TRUE(run.has_value() && lumi.has_value() && event.has_value());
    for (size_t e = 0; e < static_cast<size_t>(gf.events); ++e) {
      std::tuple<uint32_t, uint32_t, uint64_t> id{
          run->values<uint32_t>()[e], lumi->values<uint32_t>()[e], event->values<uint64_t>()[e]};
      ASSERT_LT(prev, id);  // sorted and unique across the whole dataset
      prev = id;
    }
  }
}

TEST(GenerateNanoAod, SameSeedSameBytesOnOneThreadOrThree) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir a, b;
  GenOptions oa = Small(a.path());
  GenOptions ob = Small(b.path());
  oa.measure_agc = ob.measure_agc = false;
  // One side resamples, serialises and compresses on three threads, the other on one.
  ob.pipeline = false;
  ASSERT_TRUE(GenerateNanoAod(oa).has_value());
  ASSERT_TRUE(GenerateNanoAod(ob).has_value());
  for (const char* name : {"/nanoaod_0000.root", "/nanoaod_0001.root"}) {
    EXPECT_EQ(testing::ReadWholeFile(a.path() + name), testing::ReadWholeFile(b.path() + name))
        << name;
  }
}

TEST(GenerateNanoAod, EventModeIsItsOwnDeterministicModel) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir a, b, c;
  GenOptions oa = Small(a.path());
  GenOptions ob = Small(b.path());
  GenOptions oc = Small(c.path());
  oa.measure_agc = ob.measure_agc = oc.measure_agc = false;
  oa.mode = ob.mode = GenMode::kEvent;
  ob.pipeline = false;
  ASSERT_TRUE(GenerateNanoAod(oa).has_value());
  ASSERT_TRUE(GenerateNanoAod(ob).has_value());
  ASSERT_TRUE(GenerateNanoAod(oc).has_value());  // the object model, the default
  const std::string name = "/nanoaod_0000.root";
  EXPECT_EQ(testing::ReadWholeFile(a.path() + name), testing::ReadWholeFile(b.path() + name));
  EXPECT_NE(testing::ReadWholeFile(a.path() + name), testing::ReadWholeFile(c.path() + name));
}

// Every branch of the TTree form against the same name in the RNTuple form of the same seed:
// scalars, RVecs (Jet_pt, Muon_pt, ...) and counters (nJet, ... as cardinalities).
void ExpectSameEvents(const std::string& ttree_path, const std::string& rntuple_path) {
  auto tf = rootio::RootFile::OpenPath(ttree_path);
  auto rf = rootio::RootFile::OpenPath(rntuple_path);
  ASSERT_TRUE(tf.has_value() && rf.has_value());
  auto t = (*tf)->OpenTree("Events");
  auto r = rootio::Rntuple::Open(**rf, "Events");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ((*r)->entries(), static_cast<uint64_t>((*t)->entries()));
  size_t compared = 0;
  for (const rootio::Branch& b : (*t)->info().branches) {
    auto id = (*r)->FindField(b.name);
    ASSERT_TRUE(id.has_value()) << b.name;
    auto column = (*t)->ReadLeaf(b.leaves[0], (*t)->All());
    auto values = (*r)->Read(*id, 0, (*r)->entries());
    ASSERT_TRUE(column.has_value() && values.has_value()) << b.name;
    const bool cardinality = (*r)->fields()[*id].type_name.starts_with("ROOT::RNTupleCardinality<");
    ASSERT_EQ(rootio::RntupleValue::List(*values).ToJson(),
              rootio::RntupleValue::List(rootwrite::sample::RntupleValuesOf(*column, cardinality))
                  .ToJson())
        << b.name;
    ++compared;
  }
  EXPECT_EQ(compared, 947u);
}

TEST(GenerateNanoAod, TheRntupleFormHoldsTheTreeFormsEvents) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir a, b;
  GenOptions oa = Small(a.path());
  GenOptions ob = Small(b.path());
  ob.format = OutputFormat::kRntuple;
  auto ra = GenerateNanoAod(oa);
  auto rb = GenerateNanoAod(ob);
  ASSERT_TRUE(ra.has_value()) << ra.error().ToString();
  ASSERT_TRUE(rb.has_value()) << rb.error().ToString();
  for (const char* name : {"/nanoaod_0000.root", "/nanoaod_0001.root"}) {
    ExpectSameEvents(a.path() + name, b.path() + name);
  }
  // The AGC selection resolves to the same names, and its share of the bytes is comparable.
  EXPECT_EQ(rb->agc.branches, ra->agc.branches);
  EXPECT_TRUE(rb->agc.missing.empty());
  EXPECT_GT(rb->agc.fraction, 0.01);
  EXPECT_LT(rb->agc.fraction, 0.2);
  EXPECT_EQ(rb->files[0].events, 501);
}

TEST(GenerateNanoAod, RejectsBadOptions) {
  GenOptions o;
  o.template_path = "x.root";
  o.out_dir = "/tmp";
  o.events = 1;
  o.files = 2;
  auto r = GenerateNanoAod(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  o.events = 10;
  auto missing = GenerateNanoAod(o);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().ToString().find("x.root"), std::string::npos);
}

}  // namespace
}  // namespace ferry::gen
