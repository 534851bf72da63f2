// The tree writer with background compression (BasketPipeline): the same bytes as inline, and
// the compressor's errors reach the caller. Run under TSan (label concurrency).
#include "rootwrite/basket_pipeline.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rootio/root_file.h"
#include "rootwrite/sample_tree.h"
#include "rootwrite/tree_writer.h"
#include "testing/testing.h"

namespace ferry::rootwrite {
namespace {

using rootio::LeafType;

using sample::Fixed;

// Every branch of the sample tree reads back (the bytes equal the inline file, whose values
// tree_writer_test checks).
void CheckSample(const std::string& path) {
  auto f = rootio::RootFile::OpenPath(path);
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  auto t = (*f)->OpenTree("Events");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  ASSERT_EQ((*t)->entries(), sample::kEntries);
  for (const rootio::Branch& b : (*t)->info().branches) {
    auto c = (*t)->ReadLeaf(b.name, (*t)->All());
    EXPECT_TRUE(c.has_value()) << b.name << ": " << c.error().ToString();
  }
}

TEST(BasketPipeline, BackgroundCompressionWritesTheSameBytes) {
  // Clusters by compressed size (default and a small first cluster), fixed clusters and none;
  // tiny baskets so that many are queued, and a queue budget below one basket so that the
  // writer also waits for the compressor; a second tree written after the first is closed.
  for (int64_t auto_flush : {int64_t{-30000000}, int64_t{-3000}, int64_t{300}, int64_t{0}}) {
    for (size_t queue : {size_t{64} << 20, size_t{100}}) {
      SCOPED_TRACE("auto_flush " + std::to_string(auto_flush) + ", queue " + std::to_string(queue));
      testing::TempDir a;
      testing::TempDir b;
      TreeOptions to;
      to.auto_flush = auto_flush;
      to.basket_size = 600;
      Status st = sample::Write(a.File("t.root"), Fixed(), to, true, /*two_trees=*/true);
      ASSERT_TRUE(st.has_value()) << st.error().ToString();
      to.background_compression = true;
      to.max_queued_bytes = queue;
      st = sample::Write(b.File("t.root"), Fixed(), to, true, /*two_trees=*/true);
      ASSERT_TRUE(st.has_value()) << st.error().ToString();
      const std::vector<uint8_t> want = testing::ReadWholeFile(a.File("t.root"));
      ASSERT_GT(want.size(), 20000u);
      EXPECT_EQ(want, testing::ReadWholeFile(b.File("t.root")));
      CheckSample(b.File("t.root"));
    }
  }
}

TEST(BasketPipeline, BackgroundCompressionReportsAFullDisk) {
  FileOptions fo = Fixed({codec::Algorithm::kZlib, 1});
  fo.write_buffer_bytes = 4096;
  auto file = FileWriter::Create("/dev/full", fo);
  if (!file.has_value()) {
    GTEST_SKIP() << "cannot open /dev/full: " << file.error().ToString();
  }
  TreeOptions to;
  to.background_compression = true;
  to.basket_size = 1000;
  TreeWriter tw(**file, to);
  int32_t x = *tw.AddBranch({"x", LeafType::kFloat64});
  Status st;
  // The compressor's error reaches a later Fill (or Close): never lost.
  int e = 0;
  for (; e < 200000 && st.has_value(); ++e) {
    tw.Set<double>(x, std::sin(e));
    st = tw.Fill();
  }
  if (st.has_value()) {
    st = tw.Close();
  }
  ASSERT_FALSE(st.has_value());
  EXPECT_LT(e, 200000);
  EXPECT_EQ(st.error().code(), ErrorCode::kNoSpace);
  EXPECT_NE(st.error().ToString().find("/dev/full"), std::string::npos) << st.error().ToString();
  // Sticky, and the writer stays usable for nothing else.
  EXPECT_FALSE(tw.Close().has_value());
}

}  // namespace
}  // namespace ferry::rootwrite
