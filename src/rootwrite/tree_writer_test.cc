#include "rootwrite/tree_writer.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "rootio/root_file.h"
#include "rootwrite/sample_tree.h"
#include "testing/testing.h"

namespace ferry::rootwrite {
namespace {

using rootio::LeafType;

using sample::Fixed;

void WriteSample(const std::string& path, const FileOptions& fo, TreeOptions to) {
  Status st = sample::Write(path, fo, to, /*with_nan=*/true);
  ASSERT_TRUE(st.has_value()) << st.error().ToString();
}

void CheckSample(const std::string& path) {
  auto f = rootio::RootFile::OpenPath(path);
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  auto t = (*f)->OpenTree("Events");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  const rootio::Tree& tree = **t;
  ASSERT_EQ(tree.entries(), sample::kEntries);
  auto col = [&](const char* name) {
    auto c = tree.ReadLeaf(name, tree.All());
    EXPECT_TRUE(c.has_value()) << name << ": " << c.error().ToString();
    return c.has_value() ? std::move(*c) : rootio::Column{};
  };
  auto flag = col("flag");
  auto i8 = col("i8");
  auto u8 = col("u8");
  auto i16 = col("i16");
  auto u16 = col("u16");
  auto i32 = col("i32");
  auto u32 = col("u32");
  auto i64 = col("i64");
  auto u64 = col("event");
  auto fl = col("f");
  auto d = col("d");
  auto arr = col("arr");
  auto n = col("nJet");
  auto pt = col("Jet_pt");
  auto id = col("Jet_id");
  auto s = col("str");
  for (int e = 0; e < sample::kEntries; ++e) {
    auto k = static_cast<size_t>(e);
    ASSERT_EQ(flag.values<uint8_t>()[k], e % 3 == 0 ? 1 : 0);
    ASSERT_EQ(i8.values<int8_t>()[k], static_cast<int8_t>(e % 256 - 128));
    ASSERT_EQ(u8.values<uint8_t>()[k], static_cast<uint8_t>(e % 256));
    ASSERT_EQ(i16.values<int16_t>()[k], static_cast<int16_t>(-e));
    ASSERT_EQ(u16.values<uint16_t>()[k], static_cast<uint16_t>(e * 60));
    ASSERT_EQ(i32.values<int32_t>()[k], -e * 1000);
    ASSERT_EQ(u32.values<uint32_t>()[k], static_cast<uint32_t>(e) * 4000000u);
    ASSERT_EQ(i64.values<int64_t>()[k], sample::I64(e));
    ASSERT_EQ(u64.values<uint64_t>()[k], sample::Event(e));
    ASSERT_EQ(fl.values<float>()[k], static_cast<float>(e) / 3.0f);
    if (e == 5) {
      ASSERT_TRUE(std::isnan(d.values<double>()[k]));
    } else {
      ASSERT_EQ(d.values<double>()[k], e / 7.0);
    }
    ASSERT_EQ(arr.values<double>()[3 * k + 2], -e * 3.0);
    uint32_t cnt = sample::Count(e);
    ASSERT_EQ(n.values<uint32_t>()[k], cnt);
    auto [b0, b1] = pt.EntryValues(e);
    ASSERT_EQ(b1 - b0, cnt);
    for (uint32_t j = 0; j < cnt; ++j) {
      ASSERT_EQ(pt.values<float>()[b0 + j], sample::Pt(e, j));
      ASSERT_EQ(id.values<uint8_t>()[b0 + j], sample::Id(e, j) ? 1 : 0);
    }
    ASSERT_EQ(s.StringAt(e), sample::Str(e));
  }
}

TEST(TreeWriter, EveryTypeRoundTripsThroughTheReader) {
  testing::TempDir dir;
  for (const char* codec : {"none", "zlib:1", "lzma:1", "zstd:5", "lz4"}) {
    SCOPED_TRACE(codec);
    std::string path = dir.File(std::string("sample-") + codec + ".root");
    TreeOptions to;
    to.basket_size = 1000;  // many baskets per branch
    WriteSample(path, Fixed(*codec::Setting::Parse(codec)), to);
    CheckSample(path);
  }
}

TEST(TreeWriter, ForcedBigFormReadsBack) {
  testing::TempDir dir;
  FileOptions fo = Fixed();
  fo.force_big = true;
  WriteSample(dir.File("big.root"), fo, TreeOptions{});
  auto f = rootio::RootFile::OpenPath(dir.File("big.root"));
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_TRUE((*f)->header().big);
  EXPECT_EQ((*f)->header().units, 8);
  CheckSample(dir.File("big.root"));
}

TEST(TreeWriter, FixedClustersFlushEveryBranch) {
  testing::TempDir dir;
  TreeOptions to;
  to.auto_flush = 300;
  WriteSample(dir.File("c.root"), Fixed(), to);
  auto f = rootio::RootFile::OpenPath(dir.File("c.root"));
  ASSERT_TRUE(f.has_value());
  auto t = (*f)->OpenTree("Events");
  ASSERT_TRUE(t.has_value());
  const rootio::TreeInfo& info = (*t)->info();
  EXPECT_EQ(info.auto_flush, 300);
  auto clusters = info.Clusters();
  ASSERT_EQ(clusters.size(), 4u);
  EXPECT_EQ(clusters[3], (rootio::EntryRange{900, 1000}));
  // Every basket boundary of every branch is a cluster boundary.
  for (const rootio::Branch& b : info.branches) {
    ASSERT_EQ(b.baskets.size(), 4u) << b.name;
    for (size_t i = 0; i < b.baskets.size(); ++i) {
      EXPECT_EQ(b.baskets[i].first_entry, static_cast<int64_t>(300 * i));
    }
  }
  CheckSample(dir.File("c.root"));
}

TEST(TreeWriter, SameSeedAndTimeGiveIdenticalFiles) {
  // The file name is recorded in the file, so both copies get the same name.
  testing::TempDir a;
  testing::TempDir b;
  WriteSample(a.File("same.root"), Fixed(), TreeOptions{});
  WriteSample(b.File("same.root"), Fixed(), TreeOptions{});
  EXPECT_EQ(testing::ReadWholeFile(a.File("same.root")),
            testing::ReadWholeFile(b.File("same.root")));
}

TEST(TreeWriter, RejectsInconsistentEntries) {
  testing::TempDir dir;
  auto file = FileWriter::Create(dir.File("bad.root"), Fixed());
  ASSERT_TRUE(file.has_value());
  TreeWriter tw(**file, TreeOptions{});
  EXPECT_FALSE(tw.AddBranch({"x", LeafType::kFloat32, 1, "nope"}).has_value());
  int32_t n = *tw.AddBranch({"n", LeafType::kInt32});
  EXPECT_FALSE(tw.AddBranch({"n", LeafType::kInt32}).has_value());
  EXPECT_FALSE(tw.AddBranch({"s", LeafType::kString, 1, "n"}).has_value());
  int32_t x = *tw.AddBranch({"x", LeafType::kFloat32, 1, "n"});
  tw.Set<int32_t>(n, 2);
  float one = 1.0f;
  tw.SetArray<float>(x, std::span<const float>(&one, 1));
  Status st = tw.Fill();
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().ToString().find("expected 2"), std::string::npos) << st.error().ToString();
  // Errors are sticky.
  EXPECT_FALSE(tw.Close().has_value());
}

TEST(TreeWriter, TypeMismatchIsAnError) {
  testing::TempDir dir;
  auto file = FileWriter::Create(dir.File("bad.root"), Fixed());
  ASSERT_TRUE(file.has_value());
  TreeWriter tw(**file, TreeOptions{});
  int32_t x = *tw.AddBranch({"x", LeafType::kFloat32});
  tw.Set<double>(x, 1.0);
  Status st = tw.Fill();
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().ToString().find("Float_t"), std::string::npos) << st.error().ToString();
}

TEST(TreeWriter, FullDiskIsNoSpaceWithContext) {
  FileOptions fo = Fixed({codec::Algorithm::kNone, 0});
  fo.write_buffer_bytes = 4096;
  auto file = FileWriter::Create("/dev/full", fo);
  if (!file.has_value()) {
    GTEST_SKIP() << "cannot open /dev/full: " << file.error().ToString();
  }
  TreeWriter tw(**file, TreeOptions{});
  int32_t x = *tw.AddBranch({"x", LeafType::kFloat64});
  Status st;
  for (int e = 0; e < 100000 && st.has_value(); ++e) {
    tw.Set<double>(x, e);
    st = tw.Fill();
  }
  if (st.has_value()) {
    st = tw.Close();
  }
  if (st.has_value()) {
    st = (*file)->Close();
  }
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kNoSpace);
  EXPECT_NE(st.error().ToString().find("/dev/full"), std::string::npos) << st.error().ToString();
}

TEST(TreeWriter, EmptyTreeHasBranchesAndNoBaskets) {
  testing::TempDir dir;
  auto file = FileWriter::Create(dir.File("empty.root"), Fixed());
  ASSERT_TRUE(file.has_value());
  TreeWriter tw(**file, TreeOptions{.name = "tree", .title = "nothing"});
  ASSERT_TRUE(tw.AddBranch({"x", LeafType::kInt32}).has_value());
  ASSERT_TRUE(tw.AddBranch({"z", LeafType::kString}).has_value());
  ASSERT_TRUE(tw.Close().has_value());
  ASSERT_TRUE((*file)->Close().has_value());
  auto f = rootio::RootFile::OpenPath(dir.File("empty.root"));
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  auto t = (*f)->OpenTree("tree");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ((*t)->entries(), 0);
  EXPECT_EQ((*t)->info().title, "nothing");
  ASSERT_EQ((*t)->info().branches.size(), 2u);
  EXPECT_TRUE((*t)->info().branches[1].baskets.empty());
}

}  // namespace
}  // namespace ferry::rootwrite
