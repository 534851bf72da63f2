#include "base/json_writer.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace ferry {
namespace {

TEST(JsonWriter, NestedStructureAndNumbers) {
  JsonWriter w;
  w.BeginObject()
      .Field("tree", "Events")
      .Key("entries")
      .BeginArray()
      .Int(0)
      .Int(5)
      .EndArray()
      .Key("v")
      .BeginArray()
      .Float(17.921875f)
      .Double(0.1)
      .Bool(true)
      .Null()
      .EndArray()
      .Key("empty")
      .BeginObject()
      .EndObject()
      .EndObject();
  EXPECT_EQ(
      w.str(),
      R"({"tree":"Events","entries":[0,5],"v":[17.921875,0.10000000000000001,true,null],"empty":{}})");
}

TEST(JsonWriter, NonFiniteAndEscapes) {
  JsonWriter w;
  w.BeginArray()
      .Double(std::numeric_limits<double>::quiet_NaN())
      .Float(std::numeric_limits<float>::infinity())
      .Double(-std::numeric_limits<double>::infinity())
      .String("a\"b\\c\n\x01")
      .Uint(18446744073709551615ull)
      .EndArray();
  EXPECT_EQ(w.str(), "[NaN,Infinity,-Infinity,\"a\\\"b\\\\c\\n\\u0001\",18446744073709551615]");
}

}  // namespace
}  // namespace ferry
