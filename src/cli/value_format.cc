#include "cli/value_format.h"

#include <cstring>

namespace ferry::cli {

using rootio::LeafType;

namespace {
template <class T>
T At(const rootio::Column& c, size_t k) {
  T v;
  std::memcpy(&v, c.bytes.data() + k * sizeof(T), sizeof(T));
  return v;
}
}  // namespace

void WriteValue(JsonWriter& w, const rootio::Column& col, size_t k) {
  switch (col.type) {
    case LeafType::kBool:
      w.Bool(At<uint8_t>(col, k) != 0);
      break;
    case LeafType::kInt8:
      w.Int(At<int8_t>(col, k));
      break;
    case LeafType::kUInt8:
      w.Uint(At<uint8_t>(col, k));
      break;
    case LeafType::kInt16:
      w.Int(At<int16_t>(col, k));
      break;
    case LeafType::kUInt16:
      w.Uint(At<uint16_t>(col, k));
      break;
    case LeafType::kInt32:
      w.Int(At<int32_t>(col, k));
      break;
    case LeafType::kUInt32:
      w.Uint(At<uint32_t>(col, k));
      break;
    case LeafType::kInt64:
      w.Int(At<int64_t>(col, k));
      break;
    case LeafType::kUInt64:
      w.Uint(At<uint64_t>(col, k));
      break;
    case LeafType::kFloat32:
      w.Float(At<float>(col, k));
      break;
    case LeafType::kFloat64:
      w.Double(At<double>(col, k));
      break;
    case LeafType::kString:
    case LeafType::kUnknown:
      w.Null();
      break;
  }
}

void WriteEntry(JsonWriter& w, const rootio::Column& col, int64_t i) {
  if (col.type == LeafType::kString) {
    w.String(col.StringAt(i));
    return;
  }
  auto [b, e] = col.EntryValues(i);
  if (!col.jagged && col.fixed_len == 1) {
    WriteValue(w, col, b);
    return;
  }
  w.BeginArray();
  for (uint64_t k = b; k < e; ++k) {
    WriteValue(w, col, k);
  }
  w.EndArray();
}

}  // namespace ferry::cli
