// ROOT files read through XRootD (XrdSource over a real origin) give the same values as the same
// files read locally, at a small request count.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rootio/root_file.h"
#include "testing/testing.h"
#include "testing/xrootd_server.h"
#include "xrd/open_source.h"
#include "xrd/xrd_source.h"

namespace ferry {
namespace {

std::unique_ptr<rootio::RootFile> OpenOrDie(std::unique_ptr<io::ByteSource> src) {
  auto f = rootio::RootFile::Open(std::move(src));
  EXPECT_TRUE(f.has_value()) << f.error().ToString();
  return f.has_value() ? std::move(*f) : nullptr;
}

rootio::Column ReadColumn(const rootio::RootFile& f,
                          const std::string& tree,
                          const std::string& leaf) {
  auto t = f.OpenTree(tree);
  EXPECT_TRUE(t.has_value()) << t.error().ToString();
  if (!t.has_value()) {
    return {};
  }
  auto c = (*t)->ReadLeaf(leaf, (*t)->All());
  EXPECT_TRUE(c.has_value()) << c.error().ToString();
  return c.has_value() ? std::move(*c) : rootio::Column{};
}

TEST(XrdRootio, BranchesReadOverXrootdEqualLocalReads) {
  FERRY_REQUIRE_ROOT_DATA();
  // The shared data folder is world-readable, so the origin serves it directly.
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, testing::RootDataDir());
  struct Case {
    std::string file, tree, leaf;
  };
  const std::vector<Case> cases = {
      {"nano_dy.root", "Events", "Jet_pt"},
      {"nano_dy.root", "Events", "event"},
      {"nanoAOD_2015_CMS_Open_Data_ttbar.root", "Events", "Jet_pt"},
      {"uproot-HZZ-zstd.root", "events", "Muon_Px"},
      {"uproot-HZZ-lz4.root", "events", "NMuon"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + " " + c.leaf);
    auto remote_src = xrd::OpenSource(origin->Url(c.file));
    ASSERT_TRUE(remote_src.has_value()) << remote_src.error().ToString();
    EXPECT_NE(dynamic_cast<xrd::XrdSource*>(remote_src->get()), nullptr);
    auto local_src = xrd::OpenSource(testing::RootDataFile(c.file));
    ASSERT_TRUE(local_src.has_value());
    auto remote = OpenOrDie(std::move(*remote_src));
    auto local = OpenOrDie(std::move(*local_src));
    ASSERT_TRUE(remote && local);
    rootio::Column r = ReadColumn(*remote, c.tree, c.leaf);
    rootio::Column l = ReadColumn(*local, c.tree, c.leaf);
    EXPECT_GT(l.num_entries, 0);
    EXPECT_EQ(r.num_entries, l.num_entries);
    EXPECT_EQ(r.offsets, l.offsets);
    EXPECT_EQ(r.bytes, l.bytes);
    // The same reads went to both sources.
    EXPECT_EQ(remote->source().stats().requests(), local->source().stats().requests());
    EXPECT_EQ(remote->source().stats().bytes, local->source().stats().bytes);
  }
}

TEST(XrdRootio, WholeFileBytesAndListingMatch) {
  FERRY_REQUIRE_ROOT_DATA();
  FERRY_XROOTD_ORIGIN_OR_SKIP(origin, testing::RootDataDir());
  const std::string name = "uproot-nesteddirs.root";
  auto remote = xrd::XrdSource::Open(origin->Url(name));
  ASSERT_TRUE(remote.has_value()) << remote.error().ToString();
  std::vector<uint8_t> got((*remote)->size());
  ASSERT_TRUE((*remote)->ReadAt(0, got).has_value());
  EXPECT_EQ(got, testing::ReadWholeFile(testing::RootDataFile(name)));

  auto f = OpenOrDie(std::move(*remote));
  ASSERT_TRUE(f);
  auto trees = f->TreePaths();
  ASSERT_TRUE(trees.has_value()) << trees.error().ToString();
  EXPECT_EQ(trees->size(), 3u);
}

}  // namespace
}  // namespace ferry
