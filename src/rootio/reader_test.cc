// The reader against every real ROOT file in data/root, with the values listed in
// that folder's README (obtained there with jsroot and an independent raw decoder).
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rootio/root_file.h"
#include "rootio/storage.h"
#include "testing/testing.h"

namespace ferry::rootio {
namespace {

std::unique_ptr<RootFile> OpenData(const std::string& name) {
  auto f = RootFile::OpenPath(testing::RootDataFile(name));
  EXPECT_TRUE(f.has_value()) << f.error().ToString();
  return f.has_value() ? std::move(*f) : nullptr;
}

std::unique_ptr<Tree> OpenTreeOf(const RootFile& f, const std::string& path) {
  auto t = f.OpenTree(path);
  EXPECT_TRUE(t.has_value()) << t.error().ToString();
  return t.has_value() ? std::move(*t) : nullptr;
}

Column ReadAll(const Tree& t, const std::string& name) {
  auto c = t.ReadLeaf(name, t.All());
  EXPECT_TRUE(c.has_value()) << name << ": " << c.error().ToString();
  return c.has_value() ? std::move(*c) : Column{};
}

template <class T>
std::vector<T> Values(const Column& c, int64_t entry) {
  auto [b, e] = c.EntryValues(entry);
  auto all = c.values<T>();
  return std::vector<T>(all.begin() + static_cast<ptrdiff_t>(b),
                        all.begin() + static_cast<ptrdiff_t>(e));
}

// Every readable leaf of every tree, keyed "tree/leaf".
std::map<std::string, Column> ReadEverything(const RootFile& f) {
  std::map<std::string, Column> out;
  auto paths = f.TreePaths();
  EXPECT_TRUE(paths.has_value());
  for (const std::string& p : *paths) {
    auto t = OpenTreeOf(f, p);
    if (!t) {
      continue;
    }
    for (size_t li = 0; li < t->info().leaves.size(); ++li) {
      if (!t->CheckReadable(static_cast<int32_t>(li)).has_value()) {
        continue;
      }
      auto c = t->ReadLeaf(static_cast<int32_t>(li), t->All());
      EXPECT_TRUE(c.has_value()) << p << "/" << t->info().leaves[li].name << ": "
                                 << c.error().ToString();
      if (c.has_value()) {
        out[p + "/" + t->info().leaves[li].name] = std::move(*c);
      }
    }
  }
  return out;
}

void ExpectSameColumns(const std::map<std::string, Column>& a,
                       const std::map<std::string, Column>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, col] : a) {
    auto it = b.find(name);
    ASSERT_NE(it, b.end()) << name;
    EXPECT_EQ(col.type, it->second.type) << name;
    EXPECT_EQ(col.num_entries, it->second.num_entries) << name;
    EXPECT_EQ(col.offsets, it->second.offsets) << name;
    EXPECT_EQ(col.bytes, it->second.bytes) << name;
  }
}

class RealFiles : public ::testing::Test {
 protected:
  void SetUp() override { FERRY_REQUIRE_ROOT_DATA(); }
};

TEST_F(RealFiles, EveryFileOpensAndEveryReadableBranchReads) {
  for (const std::string& path : testing::AllRootDataFiles()) {
    SCOPED_TRACE(path);
    auto f = RootFile::OpenPath(path);
    ASSERT_TRUE(f.has_value()) << f.error().ToString();
    auto paths = (*f)->TreePaths();
    ASSERT_TRUE(paths.has_value()) << paths.error().ToString();
    EXPECT_FALSE(paths->empty());
    auto all = ReadEverything(**f);
    for (const auto& [name, col] : all) {
      EXPECT_GE(col.num_entries, 0) << name;
    }
    auto si = (*f)->ReadStreamerInfo();
    ASSERT_TRUE(si.has_value()) << si.error().ToString();
    bool has_ttree = false;
    for (const auto& e : *si) {
      has_ttree |= e.class_name == "TTree";
    }
    EXPECT_TRUE(has_ttree);
  }
}

TEST_F(RealFiles, NanoAodWithBasketsEmbeddedInTheTree) {
  auto f = OpenData("nanoAOD_2015_CMS_Open_Data_ttbar.root");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->header().version, 62208);
  EXPECT_FALSE(f->header().big);
  auto t = OpenTreeOf(*f, "Events");
  ASSERT_TRUE(t);
  const TreeInfo& info = t->info();
  EXPECT_EQ(info.entries, 200);
  EXPECT_EQ(info.top_branches.size(), 947u);
  EXPECT_EQ(info.leaves.size(), 947u);
  int jagged = 0;
  int embedded = 0;
  for (const Leaf& l : info.leaves) {
    jagged += l.jagged() ? 1 : 0;
  }
  for (const Branch& b : info.branches) {
    embedded += static_cast<int>(b.embedded.size());
  }
  EXPECT_EQ(jagged, 344);
  EXPECT_EQ(embedded, 947);

  Column event = ReadAll(*t, "event");
  EXPECT_EQ(event.type, LeafType::kUInt64);
  EXPECT_EQ((std::vector<uint64_t>(event.values<uint64_t>().begin(),
                                   event.values<uint64_t>().begin() + 5)),
            (std::vector<uint64_t>{227291401, 227291402, 227291406, 227291408, 227291410}));
  Column jet_pt = ReadAll(*t, "Jet_pt");
  ASSERT_TRUE(jet_pt.jagged);
  EXPECT_EQ(Values<float>(jet_pt, 0), (std::vector<float>{17.921875f, 15.734375f}));
  EXPECT_EQ(Values<float>(jet_pt, 1), (std::vector<float>{37.875f}));
  EXPECT_EQ(Values<float>(jet_pt, 2),
            (std::vector<float>{72.6875f, 56.75f, 19.15625f, 16.703125f}));
  EXPECT_EQ(Values<float>(jet_pt, 4).size(), 7u);
  // Jet counts agree with the counter branch everywhere.
  Column njet = ReadAll(*t, "nJet");
  for (int64_t e = 0; e < 200; ++e) {
    auto [b, end] = jet_pt.EntryValues(e);
    EXPECT_EQ(end - b, njet.AsUint64(static_cast<size_t>(e))) << "entry " << e;
  }
  // LHEPdfWeight is the one branch with baskets on disk (ZL) besides the embedded one.
  int32_t pdf = info.FindBranch("LHEPdfWeight");
  ASSERT_GE(pdf, 0);
  Column w = ReadAll(*t, "LHEPdfWeight");
  EXPECT_EQ(w.num_entries, 200);
}

TEST_F(RealFiles, NanoDyBothTrees) {
  auto f = OpenData("nano_dy.root");
  ASSERT_TRUE(f);
  auto paths = f->TreePaths();
  ASSERT_TRUE(paths.has_value());
  EXPECT_EQ(*paths, (std::vector<std::string>{"Events", "Runs"}));
  auto ev = OpenTreeOf(*f, "Events");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->entries(), 40);
  EXPECT_EQ(ev->info().top_branches.size(), 1499u);
  Column event = ReadAll(*ev, "event");
  EXPECT_EQ(event.values<uint64_t>()[0], 3749778u);
  EXPECT_EQ(event.values<uint64_t>()[4], 3749761u);
  Column jet_pt = ReadAll(*ev, "Jet_pt");
  EXPECT_EQ(Values<float>(jet_pt, 0),
            (std::vector<float>{80.75f, 45.59375f, 29.640625f, 17.5625f, 15.234375f}));
  auto runs = OpenTreeOf(*f, "Runs");
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->entries(), 1);
  EXPECT_EQ(runs->info().top_branches.size(), 8u);
  EXPECT_EQ(ReadAll(*runs, "run").values<uint32_t>()[0], 1u);
  Column sumw = ReadAll(*runs, "LHEScaleSumw_");
  auto v = Values<double>(sumw, 0);
  ASSERT_EQ(v.size(), 9u);
  EXPECT_NEAR(v[0], 42.3966917231932, 1e-12);
  EXPECT_NEAR(v[8], 43.6625581319737, 1e-12);
  Column gen_count = ReadAll(*runs, "genEventCount_");
  EXPECT_EQ(gen_count.type, LeafType::kInt64);
}

TEST_F(RealFiles, NanoTreeAndMissingLumi) {
  auto f = OpenData("nano_tree.root");
  ASSERT_TRUE(f);
  auto ev = OpenTreeOf(*f, "Events");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->entries(), 10);
  EXPECT_EQ(ev->info().top_branches.size(), 1011u);
  Column event = ReadAll(*ev, "event");
  EXPECT_EQ(
      (std::vector<uint64_t>(event.values<uint64_t>().begin(), event.values<uint64_t>().end())),
      (std::vector<uint64_t>{1895304, 1895291, 1895283, 1895295, 1895362,
                             event.values<uint64_t>()[5], event.values<uint64_t>()[6],
                             event.values<uint64_t>()[7], event.values<uint64_t>()[8],
                             event.values<uint64_t>()[9]}));
  Column jet_pt = ReadAll(*ev, "Jet_pt");
  EXPECT_EQ(Values<float>(jet_pt, 0), (std::vector<float>{116.8125f, 33.96875f}));

  auto m = OpenData("missing_luminosityBlock.root");
  ASSERT_TRUE(m);
  auto mt = OpenTreeOf(*m, "Events");
  ASSERT_TRUE(mt);
  EXPECT_EQ(mt->entries(), 2);
  EXPECT_EQ(mt->info().top_branches.size(), 1582u);
  EXPECT_LT(mt->info().FindBranch("luminosityBlock"), 0);
  Column mev = ReadAll(*mt, "event");
  EXPECT_EQ(mev.values<uint64_t>()[0], 61978970u);
  EXPECT_EQ(mev.values<uint64_t>()[1], 61978965u);
  Column mjet = ReadAll(*mt, "Jet_pt");
  EXPECT_EQ(Values<float>(mjet, 0), (std::vector<float>{20.78125f}));
  EXPECT_EQ(Values<float>(mjet, 1),
            (std::vector<float>{27.34375f, 23.203125f, 17.75f, 17.71875f, 15.9609375f}));
}

TEST_F(RealFiles, HzzCodecVariantsReadIdentically) {
  auto ref_file = OpenData("uproot-HZZ-uncompressed.root");
  ASSERT_TRUE(ref_file);
  auto ref = ReadEverything(*ref_file);
  EXPECT_EQ(ref.size(), 51u);
  auto t = OpenTreeOf(*ref_file, "events");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->entries(), 2421);
  Column met = ReadAll(*t, "MET_px");
  EXPECT_NEAR(met.values<float>()[0], 5.912771f, 1e-5);
  EXPECT_NEAR(met.values<float>()[2], -25.78509f, 1e-4);
  Column jpx = ReadAll(*t, "Jet_Px");
  EXPECT_TRUE(Values<float>(jpx, 0).empty());
  ASSERT_EQ(Values<float>(jpx, 3).size(), 3u);
  EXPECT_NEAR(Values<float>(jpx, 3)[1], 36.60637f, 1e-4);
  for (const char* name : {"uproot-HZZ.root", "uproot-HZZ-zlib.root", "uproot-HZZ-lzma.root",
                           "uproot-HZZ-lz4.root", "uproot-HZZ-zstd.root"}) {
    SCOPED_TRACE(name);
    auto f = OpenData(name);
    ASSERT_TRUE(f);
    ExpectSameColumns(ref, ReadEverything(*f));
  }
}

TEST_F(RealFiles, SampleFilesEveryTypeAndRootVersion) {
  auto ref_file = OpenData("uproot-sample-6.20.04-uncompressed.root");
  ASSERT_TRUE(ref_file);
  auto t = OpenTreeOf(*ref_file, "sample");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->entries(), 30);
  EXPECT_EQ(t->info().top_branches.size(), 35u);
  Column i4 = ReadAll(*t, "i4");
  EXPECT_EQ(i4.type, LeafType::kInt32);
  EXPECT_EQ(i4.values<int32_t>()[0], -15);
  EXPECT_EQ(i4.values<int32_t>()[4], -11);
  Column ab = ReadAll(*t, "Ab");
  EXPECT_EQ(ab.type, LeafType::kBool);
  EXPECT_TRUE(Values<uint8_t>(ab, 0).empty());
  EXPECT_EQ(Values<uint8_t>(ab, 2), (std::vector<uint8_t>{1, 1}));
  Column ai4 = ReadAll(*t, "ai4");
  EXPECT_FALSE(ai4.jagged);
  EXPECT_EQ(ai4.fixed_len, 3u);
  Column str = ReadAll(*t, "str");
  EXPECT_EQ(str.StringAt(0), "hey-0");
  EXPECT_EQ(str.StringAt(29), "hey-29");
  Column u8 = ReadAll(*t, "u8");
  EXPECT_EQ(u8.type, LeafType::kUInt64);
  // 411 tiny baskets: basket boundaries everywhere.
  size_t baskets = 0;
  for (const Branch& b : t->info().branches) {
    baskets += b.baskets.size();
  }
  EXPECT_EQ(baskets, 411u);
  auto ref = ReadEverything(*ref_file);
  for (const char* name : {"uproot-sample-6.20.04-zlib.root", "uproot-sample-5.23.02-zlib.root"}) {
    SCOPED_TRACE(name);
    auto f = OpenData(name);
    ASSERT_TRUE(f);
    ExpectSameColumns(ref, ReadEverything(*f));
  }
  auto old = OpenData("uproot-sample-5.23.02-zlib.root");
  auto old_tree = OpenTreeOf(*old, "sample");
  EXPECT_EQ(old_tree->info().class_version, 16);
}

TEST_F(RealFiles, OffsetsRebuiltFromCounterMatchStoredOffsets) {
  auto with = OpenData("uproot-small-dy-withoffsets.root");
  auto without = OpenData("uproot-small-dy-nooffsets.root");
  ASSERT_TRUE(with && without);
  auto a = ReadEverything(*with);
  auto b = ReadEverything(*without);
  EXPECT_EQ(a.size(), 8u);
  ExpectSameColumns(a, b);
  auto t = OpenTreeOf(*without, "tree");
  Column jet_pt = ReadAll(*t, "Jet_pt");
  EXPECT_EQ(Values<float>(jet_pt, 0),
            (std::vector<float>{34.09375f, 33.53125f, 20.25f, 19.890625f}));
  EXPECT_EQ(Values<float>(jet_pt, 4), (std::vector<float>{60.46875f, 51.1875f, 19.09375f}));
  EXPECT_EQ(ReadAll(*t, "event").values<uint64_t>()[0], 41602225u);
}

TEST_F(RealFiles, StringsLeafListsAndEmptyTrees) {
  auto z = OpenData("uproot-Zmumu.root");
  ASSERT_TRUE(z);
  auto zt = OpenTreeOf(*z, "events");
  EXPECT_EQ(zt->entries(), 2304);
  Column type = ReadAll(*zt, "Type");
  EXPECT_EQ(type.num_entries, 2304);
  for (int64_t e = 0; e < type.num_entries; ++e) {
    ASSERT_EQ(type.StringAt(e).size(), 2u) << e;
  }

  auto s = OpenData("uproot-simple.root");
  auto st = OpenTreeOf(*s, "tree");
  EXPECT_EQ(ReadAll(*st, "three").StringAt(3), "quatro");
  EXPECT_EQ(ReadAll(*st, "one").values<int32_t>()[3], 4);

  auto ll = OpenData("uproot-leaflist.root");
  auto lt = OpenTreeOf(*ll, "tree");
  ASSERT_EQ(lt->info().branches.size(), 1u);
  ASSERT_EQ(lt->info().branches[0].leaves.size(), 3u);
  EXPECT_EQ(lt->info().branches[0].fixed_entry_size, 13u);
  EXPECT_DOUBLE_EQ(ReadAll(*lt, "x").values<double>()[4], 5.5);
  EXPECT_EQ(ReadAll(*lt, "y").values<int32_t>()[4], 5);
  EXPECT_EQ(ReadAll(*lt, "z").values<int8_t>()[0], 97);

  auto e = OpenData("uproot-empty.root");
  auto et = OpenTreeOf(*e, "tree");
  EXPECT_EQ(et->entries(), 0);
  EXPECT_EQ(et->info().top_branches.size(), 3u);
  EXPECT_EQ(ReadAll(*et, "z").num_entries, 0);
  EXPECT_TRUE(et->info().Clusters().empty());
}

TEST_F(RealFiles, NestedDirectoriesAndObjectBranches) {
  auto f = OpenData("uproot-nesteddirs.root");
  ASSERT_TRUE(f);
  auto paths = f->TreePaths();
  ASSERT_TRUE(paths.has_value());
  EXPECT_EQ(*paths, (std::vector<std::string>{"one/two/tree", "one/tree", "three/tree"}));
  auto t2 = OpenTreeOf(*f, "one/two/tree");
  EXPECT_EQ(t2->entries(), 100);
  Column slice = ReadAll(*t2, "SliceInt32");
  EXPECT_EQ(Values<int32_t>(slice, 3), (std::vector<int32_t>{3, 3, 3}));
  EXPECT_EQ(ReadAll(*t2, "Str").StringAt(0), "evt-000");
  auto t3 = OpenTreeOf(*f, "three/tree");
  ASSERT_TRUE(t3);
  EXPECT_EQ(t3->entries(), 100);
  EXPECT_EQ(t3->info().top_branches.size(), 1u);
  EXPECT_EQ(t3->info().leaves.size(), 42u);
  const Branch& top = t3->info().branches[static_cast<size_t>(t3->info().top_branches[0])];
  EXPECT_FALSE(top.supported);
  auto r = t3->ReadLeaf(t3->info().leaves[0].name, t3->All());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(f->OpenTree("no/such/tree").has_value());
}

TEST_F(RealFiles, EntryRangesAcrossBasketBoundaries) {
  auto f = OpenData("uproot-sample-6.20.04-zlib.root");
  auto t = OpenTreeOf(*f, "sample");
  Column all = ReadAll(*t, "Ai8");
  for (int64_t a = 0; a <= 30; a += 7) {
    for (int64_t b = a; b <= 30; b += 5) {
      auto part = t->ReadLeaf("Ai8", {a, b});
      ASSERT_TRUE(part.has_value());
      ASSERT_EQ(part->num_entries, b - a);
      for (int64_t e = a; e < b; ++e) {
        EXPECT_EQ(Values<int64_t>(*part, e - a), Values<int64_t>(all, e));
      }
    }
  }
  EXPECT_FALSE(t->ReadLeaf("Ai8", {0, 31}).has_value());
  EXPECT_FALSE(t->ReadLeaf("nonexistent", {0, 1}).has_value());
}

TEST_F(RealFiles, ClustersFollowAutoFlush) {
  auto f = OpenData("uproot-small-dy-withoffsets.root");
  auto t = OpenTreeOf(*f, "tree");
  auto clusters = t->info().Clusters();
  ASSERT_FALSE(clusters.empty());
  EXPECT_EQ(clusters.front().begin, 0);
  EXPECT_EQ(clusters.back().end, 501);
  for (size_t i = 1; i < clusters.size(); ++i) {
    EXPECT_EQ(clusters[i].begin, clusters[i - 1].end);
  }
}

TEST_F(RealFiles, StorageSurveyCodecs) {
  struct Case {
    const char* file;
    const char* codec;
  };
  for (Case c : {Case{"uproot-HZZ-zlib.root", "zlib"}, Case{"uproot-HZZ-lzma.root", "lzma"},
                 Case{"uproot-HZZ-zstd.root", "zstd"}, Case{"uproot-HZZ-lz4.root", "lz4"},
                 Case{"uproot-HZZ-uncompressed.root", "none"}}) {
    SCOPED_TRACE(c.file);
    auto f = OpenData(c.file);
    auto t = OpenTreeOf(*f, "events");
    auto s = SurveyStorage(*t);
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    int32_t b = t->info().FindBranch("Muon_Px");
    EXPECT_EQ((*s)[static_cast<size_t>(b)].CodecName(), c.codec);
    EXPECT_GT((*s)[static_cast<size_t>(b)].zbytes, 0u);
    EXPECT_EQ(t->source().stats().vector_calls, 1u);
  }
}

}  // namespace
}  // namespace ferry::rootio
