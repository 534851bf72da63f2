#include "rootio/rntuple_value.h"

#include <utility>

namespace ferry::rootio {

RntupleValue RntupleValue::Bool(bool b) {
  RntupleValue v;
  v.kind = Kind::kBool;
  v.i = b ? 1 : 0;
  return v;
}

RntupleValue RntupleValue::Int(int64_t x) {
  RntupleValue v;
  v.kind = Kind::kInt;
  v.i = x;
  return v;
}

RntupleValue RntupleValue::UInt(uint64_t x) {
  RntupleValue v;
  v.kind = Kind::kUInt;
  v.u = x;
  return v;
}

RntupleValue RntupleValue::Real(double x) {
  RntupleValue v;
  v.kind = Kind::kReal;
  v.d = x;
  return v;
}

RntupleValue RntupleValue::Float(float x) {
  RntupleValue v = Real(x);
  v.single = true;
  return v;
}

RntupleValue RntupleValue::String(std::string x) {
  RntupleValue v;
  v.kind = Kind::kString;
  v.s = std::move(x);
  return v;
}

RntupleValue RntupleValue::List(std::vector<RntupleValue> items) {
  RntupleValue v;
  v.kind = Kind::kList;
  v.items = std::move(items);
  return v;
}

const RntupleValue* RntupleValue::Member(const std::string& name) const {
  if (kind != Kind::kRecord) {
    return nullptr;
  }
  for (size_t k = 0; k < names.size() && k < items.size(); ++k) {
    if (names[k] == name) {
      return &items[k];
    }
  }
  return nullptr;
}

void RntupleValue::WriteJson(JsonWriter& w) const {
  switch (kind) {
    case Kind::kNull:
      w.Null();
      break;
    case Kind::kBool:
      w.Bool(i != 0);
      break;
    case Kind::kInt:
      w.Int(i);
      break;
    case Kind::kUInt:
      w.Uint(u);
      break;
    case Kind::kReal:
      if (single) {
        w.Float(static_cast<float>(d));
      } else {
        w.Double(d);
      }
      break;
    case Kind::kString:
      w.String(s);
      break;
    case Kind::kList:
      w.BeginArray();
      for (const RntupleValue& item : items) {
        item.WriteJson(w);
      }
      w.EndArray();
      break;
    case Kind::kRecord:
      w.BeginObject();
      for (size_t k = 0; k < items.size() && k < names.size(); ++k) {
        w.Key(names[k]);
        items[k].WriteJson(w);
      }
      w.EndObject();
      break;
  }
}

std::string RntupleValue::ToJson() const {
  JsonWriter w;
  WriteJson(w);
  return w.Take();
}

}  // namespace ferry::rootio
