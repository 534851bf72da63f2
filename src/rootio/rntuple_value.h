// RntupleValue: one value of an RNTuple field, as a small tree: null, bool, signed or
// unsigned integer, real, string, list (vectors, RVecs, arrays, sets, maps, bitsets), or record
// (structs, pairs, tuples; members named by their subfields).
//
// A plain value type for inspection, tests and the CLI, not for bulk analysis: every entry
// owns its members. Thread-safety: none needed (a value).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json_writer.h"

namespace ferry::rootio {

struct RntupleValue {
  enum class Kind : uint8_t { kNull, kBool, kInt, kUInt, kReal, kString, kList, kRecord };

  Kind kind = Kind::kNull;
  int64_t i = 0;                    // kInt; kBool as 0/1
  uint64_t u = 0;                   // kUInt
  double d = 0;                     // kReal
  bool single = false;              // kReal of a float field: printed with float precision
  std::string s;                    // kString
  std::vector<RntupleValue> items;  // kList elements, kRecord members
  std::vector<std::string> names;   // kRecord member names

  static RntupleValue Null() { return {}; }
  static RntupleValue Bool(bool b);
  static RntupleValue Int(int64_t v);
  static RntupleValue UInt(uint64_t v);
  static RntupleValue Real(double v);
  static RntupleValue Float(float v);
  static RntupleValue String(std::string v);
  static RntupleValue List(std::vector<RntupleValue> items);

  // The member called name of a record; nullptr when absent or not a record.
  const RntupleValue* Member(const std::string& name) const;

  // JSON as the CLI writes it (base/json_writer.h): lists as arrays, records as objects,
  // floats with %.9g and doubles with %.17g, as TTree dumps print them.
  void WriteJson(JsonWriter& w) const;
  std::string ToJson() const;
};

}  // namespace ferry::rootio
