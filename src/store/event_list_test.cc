#include "store/event_list.h"

#include <gtest/gtest.h>

namespace ferry::store {
namespace {

TEST(EventList, CommentsBlanksAndLineEndsAreSkipped) {
  auto ids =
      ParseEventList("# picked by a selection job\n1:2:3\r\n\n  \t7:8:9  # a comment\n1:2:3");
  ASSERT_TRUE(ids.has_value()) << ids.error().ToString();
  ASSERT_EQ(ids->size(), 3u);  // file order, duplicates kept
  EXPECT_EQ((*ids)[0], (EventId{1, 2, 3}));
  EXPECT_EQ((*ids)[1], (EventId{7, 8, 9}));
  EXPECT_EQ((*ids)[2], (EventId{1, 2, 3}));
  EXPECT_TRUE(ParseEventList("").value().empty());
}

TEST(EventList, ABadLineIsNamed) {
  for (const char* bad :
       {"1:2:3\n1:2\n", "1:2:3\n1:2:x\n", "1:2:3\n1 :2:3\n", "1:2:3\n99999999999999999999:1:1\n"}) {
    auto ids = ParseEventList(bad);
    ASSERT_FALSE(ids.has_value()) << bad;
    EXPECT_EQ(ids.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(ids.error().ToString().find("line 2"), std::string::npos) << ids.error().ToString();
  }
}

}  // namespace
}  // namespace ferry::store
