#include "gen/nanoaod_gen.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "rootio/dataset.h"
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

  auto tmpl = rootio::Dataset::OpenPath(o.template_path, "Events");
  ASSERT_TRUE(tmpl.has_value()) << tmpl.error().ToString();
  const std::vector<rootio::FieldInfo>& want = (*tmpl)->Fields();
  std::tuple<uint32_t, uint32_t, uint64_t> prev{0, 0, 0};
  for (const GenFile& gf : report->files) {
    auto t = rootio::Dataset::OpenPath(gf.path, "Events");
    ASSERT_TRUE(t.has_value()) << t.error().ToString();
    EXPECT_EQ((*t)->entries(), gf.events);
    // Same branch names, types, titles and counters as the template.
    const std::vector<rootio::FieldInfo>& got = (*t)->Fields();
    ASSERT_EQ(got.size(), want.size());
    for (const rootio::FieldInfo& w : want) {
      const auto g = std::find_if(got.begin(), got.end(),
                                  [&](const rootio::FieldInfo& f) { return f.name == w.name; });
      ASSERT_NE(g, got.end()) << w.name;
      EXPECT_EQ(g->shape.type, w.shape.type) << w.name;
      if (!w.title.empty()) {  // an empty title gets ROOT's default leaf list
        EXPECT_EQ(g->title, w.title);
      }
      EXPECT_EQ(g->shape.jagged, w.shape.jagged) << w.name;
      if (w.shape.jagged) {
        EXPECT_EQ(got[static_cast<size_t>(g->counter)].name,
                  want[static_cast<size_t>(w.counter)].name);
      }
    }
    rootio::DatasetScratch scratch;
    rootio::Column run, lumi, event;
    const rootio::EntryRange all{0, (*t)->entries()};
    ASSERT_TRUE((*t)->ReadInto((*t)->FindField("run"), all, &run, &scratch));
    ASSERT_TRUE((*t)->ReadInto((*t)->FindField("luminosityBlock"), all, &lumi, &scratch));
    ASSERT_TRUE((*t)->ReadInto((*t)->FindField("event"), all, &event, &scratch));
    for (size_t e = 0; e < static_cast<size_t>(gf.events); ++e) {
      std::tuple<uint32_t, uint32_t, uint64_t> id{
          run.values<uint32_t>()[e], lumi.values<uint32_t>()[e], event.values<uint64_t>()[e]};
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
// scalars, RVecs (Jet_pt, Muon_pt, ...) and counters (nJet, ... as cardinalities: of another
// integer type, with the same values).
void ExpectSameEvents(const std::string& ttree_path, const std::string& rntuple_path) {
  auto t = rootio::Dataset::OpenPath(ttree_path, "Events");
  auto r = rootio::Dataset::OpenPath(rntuple_path, "Events");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ((*r)->entries(), (*t)->entries());
  const rootio::EntryRange all{0, (*t)->entries()};
  rootio::DatasetScratch scratch;
  size_t compared = 0;
  for (const rootio::FieldInfo& f : (*t)->Fields()) {
    const int32_t id = (*r)->FindField(f.name);
    ASSERT_GE(id, 0) << f.name;
    rootio::Column a, b;
    ASSERT_TRUE((*t)->ReadInto(f.id, all, &a, &scratch)) << f.name;
    ASSERT_TRUE((*r)->ReadInto(id, all, &b, &scratch)) << f.name;
    ASSERT_EQ(a.num_entries, b.num_entries) << f.name;
    ASSERT_EQ(a.offsets, b.offsets) << f.name;
    ASSERT_EQ(a.num_values(), b.num_values()) << f.name;
    if (a.type == b.type) {  // bit for bit (NaNs included)
      ASSERT_TRUE(a.bytes == b.bytes) << f.name;
    } else {  // a counter and its cardinality
      ASSERT_TRUE(rootio::IsIntegerLeafType(a.type) && rootio::IsIntegerLeafType(b.type)) << f.name;
      for (size_t k = 0; k < a.num_values(); ++k) {
        ASSERT_EQ(a.AsUint64(k), b.AsUint64(k)) << f.name << " value " << k;
      }
    }
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
