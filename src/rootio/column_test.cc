// Column's offsets: shared by copies until one of them changes (copy on write).
#include "rootio/column.h"

#include <vector>

#include <gtest/gtest.h>

namespace ferry::rootio {
namespace {

TEST(OffsetsTest, SharedUntilChanged) {
  Offsets a = {0, 2, 5};
  Offsets b;
  b.Share(a);
  EXPECT_TRUE(b.SharesWith(a));
  EXPECT_EQ(b.data(), a.data());  // no copy
  b.push_back(9);                 // b takes its own vector first
  EXPECT_FALSE(b.SharesWith(a));
  EXPECT_EQ(a.vector(), (std::vector<uint64_t>{0, 2, 5}));
  EXPECT_EQ(b.vector(), (std::vector<uint64_t>{0, 2, 5, 9}));
  Offsets c = a;  // a copy shares too
  EXPECT_TRUE(c.SharesWith(a));
  c.Mutable()[1] = 3;
  EXPECT_EQ(a[1], 2u);
  EXPECT_EQ(c[1], 3u);
}

TEST(OffsetsTest, ClearDropsASharedVectorAndKeepsAnOwnOne) {
  Offsets a = {0, 1, 4};
  Offsets b;
  b.Share(a);
  b.clear();  // dropped, not copied; a keeps its values
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(a.size(), 3u);
  const uint64_t* memory = a.data();
  a.clear();  // a is the only holder: emptied in place, its memory kept for the next fill
  EXPECT_TRUE(a.empty());
  a.push_back(0);
  EXPECT_EQ(a.data(), memory);
}

TEST(OffsetsTest, EmptyAndEqual) {
  Offsets none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_EQ(std::span<const uint64_t>(none).size(), 0u);
  Offsets x = {0, 3};
  Offsets y = {0, 3};
  EXPECT_EQ(x, y);  // by value, whether shared or not
  y.assign(size_t{2}, uint64_t{7});
  EXPECT_FALSE(x == y);
}

}  // namespace
}  // namespace ferry::rootio
