// TreeClusterReader on real ROOT files: the columns decoded unit by unit from one vector read per
// unit equal Tree::ReadLeaf's, every basket is fetched once, and vector reads respect the
// range limit.
#include "rootio/tree_cluster_reader.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/local_source.h"
#include "rootio/root_file.h"
#include "testing/testing.h"

namespace ferry::rootio {
namespace {

struct Case {
  std::string file, tree;
  std::vector<std::string> leaves;
};

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

TEST(TreeClusterReader, UnitColumnsEqualWholeLeafReads) {
  FERRY_REQUIRE_ROOT_DATA();
  const std::vector<Case> cases = {
      {"nanoAOD_2015_CMS_Open_Data_ttbar.root",
       "Events",
       {"Jet_pt", "Muon_tightId", "Electron_cutBased", "LHEPdfWeight"}},
      {"nano_dy.root", "Events", {"Jet_pt", "Jet_btagCSVV2", "Muon_pfRelIso04_all", "event"}},
      {"uproot-small-dy-nooffsets.root", "tree", {"Jet_pt", "Muon_pt", "Jet_jetId", "MET_pt"}},
      {"uproot-small-dy-withoffsets.root", "tree", {"Jet_pt", "Muon_charge", "event"}},
      {"uproot-HZZ-lzma.root", "events", {"Jet_Px", "Jet_ID", "NMuon"}},
      {"uproot-sample-6.20.04-zlib.root", "sample", {"Ai4", "af8", "str", "b"}},
      {"uproot-leaflist.root", "tree", {"x", "y", "z"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto file = RootFile::OpenPath(testing::RootDataFile(c.file));
    ASSERT_TRUE(file.has_value()) << file.error().ToString();
    auto tree = (*file)->OpenTree(c.tree);
    ASSERT_TRUE(tree.has_value()) << tree.error().ToString();
    auto reader = TreeClusterReader::Make(**tree, c.leaves);
    ASSERT_TRUE(reader.has_value()) << reader.error().ToString();
    const std::vector<int32_t>& leaves = reader->leaves();
    ASSERT_GE(leaves.size(), c.leaves.size());

    // Units tile the tree; every basket of an active branch appears in exactly one unit.
    int64_t next = 0;
    size_t slots = 0;
    for (const ReadUnit& u : reader->units()) {
      EXPECT_EQ(u.entries.begin, next);
      EXPECT_GT(u.entries.size(), 0);
      next = u.entries.end;
      slots += u.baskets.size();
    }
    EXPECT_EQ(next, (*tree)->entries());
    size_t branch_baskets = 0;
    std::vector<int32_t> branches;
    for (int32_t l : leaves) {
      int32_t b = (*tree)->info().leaves[static_cast<size_t>(l)].branch;
      if (std::find(branches.begin(), branches.end(), b) == branches.end()) {
        branches.push_back(b);
        branch_baskets += (*tree)->info().branches[static_cast<size_t>(b)].baskets.size();
      }
    }
    EXPECT_EQ(slots, branch_baskets);

    io::ByteSource& source = (*file)->source();
    source.ResetStats();
    BasketDecoder decoder;
    ByteVector buffer;
    std::vector<Column> cols;
    std::vector<Column> joined(leaves.size());
    uint64_t fetching_units = 0;
    for (size_t u = 0; u < reader->units().size(); ++u) {
      ASSERT_TRUE(reader->Fetch(u, &buffer).has_value());
      Status st = reader->Decode(u, buffer, &decoder, &cols);
      ASSERT_TRUE(st.has_value()) << st.error().ToString();
      for (size_t k = 0; k < leaves.size(); ++k) {
        EXPECT_EQ(cols[k].first_entry, reader->units()[u].entries.begin);
        Append(cols[k], &joined[k]);
      }
      fetching_units += reader->units()[u].ranges > 0 ? 1u : 0u;
    }
    // One vector read per unit that has records on disk, one chunk per record.
    EXPECT_EQ(source.stats().vector_calls, fetching_units);
    EXPECT_EQ(source.stats().read_calls, 0u);
    EXPECT_EQ(source.stats().chunks, reader->ranges());
    EXPECT_EQ(source.stats().bytes, reader->bytes());
    for (size_t k = 0; k < leaves.size(); ++k) {
      auto whole = (*tree)->ReadLeaf(leaves[k], (*tree)->All());
      ASSERT_TRUE(whole.has_value()) << whole.error().ToString();
      SCOPED_TRACE((*tree)->info().leaves[static_cast<size_t>(leaves[k])].name);
      EXPECT_EQ(joined[k].num_entries, whole->num_entries);
      EXPECT_EQ(joined[k].bytes, whole->bytes);
      EXPECT_EQ(joined[k].offsets, whole->offsets);
    }
  }
}

TEST(TreeClusterReader, MergesClustersThatABasketStraddles) {
  FERRY_REQUIRE_ROOT_DATA();
  // Three clusters, but Jet_pt has four baskets whose boundaries differ from nJet's.
  auto file = RootFile::OpenPath(testing::RootDataFile("uproot-small-dy-nooffsets.root"));
  ASSERT_TRUE(file.has_value());
  auto tree = (*file)->OpenTree("tree");
  ASSERT_TRUE(tree.has_value());
  const auto clusters = (*tree)->info().Clusters();
  const std::vector<std::string> scalar = {"MET_pt"};
  auto r1 = TreeClusterReader::Make(**tree, scalar);
  ASSERT_TRUE(r1.has_value());
  const std::vector<std::string> jets = {"Jet_pt"};
  auto r2 = TreeClusterReader::Make(**tree, jets);
  ASSERT_TRUE(r2.has_value());
  EXPECT_LE(r2->units().size(), r1->units().size());
  EXPECT_LE(r1->units().size(), clusters.size());
  for (const ReadUnit& u : r2->units()) {
    for (const BasketSlot& s : u.baskets) {
      const BasketRef& ref =
          (*tree)->info().branches[static_cast<size_t>(s.branch)].baskets[s.basket];
      EXPECT_GE(ref.first_entry, u.entries.begin);
      EXPECT_LE(ref.first_entry + ref.num_entries, u.entries.end);
    }
  }
}

TEST(TreeClusterReader, SplitsVectorReadsAtTheRangeLimit) {
  FERRY_REQUIRE_ROOT_DATA();
  // 411 tiny baskets in one cluster.
  auto file = RootFile::OpenPath(testing::RootDataFile("uproot-sample-6.20.04-zlib.root"));
  ASSERT_TRUE(file.has_value());
  auto tree = (*file)->OpenTree("sample");
  ASSERT_TRUE(tree.has_value());
  const std::vector<std::string> leaves = {"Ai4", "Af8", "i2", "str"};
  ClusterReaderOptions opt;
  opt.max_ranges_per_read = 7;
  auto reader = TreeClusterReader::Make(**tree, leaves, opt);
  ASSERT_TRUE(reader.has_value()) << reader.error().ToString();
  (*file)->source().ResetStats();
  ByteVector buffer;
  uint64_t expected_calls = 0;
  for (size_t u = 0; u < reader->units().size(); ++u) {
    ASSERT_TRUE(reader->Fetch(u, &buffer).has_value());
    expected_calls += (reader->units()[u].ranges + 6) / 7;
  }
  EXPECT_GT(reader->ranges(), 7u);
  EXPECT_EQ((*file)->source().stats().vector_calls, expected_calls);
  EXPECT_EQ((*file)->source().stats().chunks, reader->ranges());
}

TEST(TreeClusterReader, MissingLeafIsNotFound) {
  FERRY_REQUIRE_ROOT_DATA();
  auto file = RootFile::OpenPath(testing::RootDataFile("nano_dy.root"));
  ASSERT_TRUE(file.has_value());
  auto tree = (*file)->OpenTree("Events");
  ASSERT_TRUE(tree.has_value());
  const std::vector<std::string> leaves = {"Jet_pt", "No_such_leaf"};
  auto reader = TreeClusterReader::Make(**tree, leaves);
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace ferry::rootio
