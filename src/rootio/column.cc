#include "rootio/column.h"

#include <cstring>

#include "base/byte_swap.h"

namespace ferry::rootio {

namespace {
template <class T>
T Get(const ByteVector& b, size_t k) {
  T v;
  std::memcpy(&v, b.data() + k * sizeof(T), sizeof(T));
  return v;
}
}  // namespace

uint64_t Column::AsUint64(size_t k) const {
  switch (type) {
    case LeafType::kBool:
    case LeafType::kUInt8:
      return Get<uint8_t>(bytes, k);
    case LeafType::kInt8:
      return static_cast<uint64_t>(Get<int8_t>(bytes, k));
    case LeafType::kInt16:
      return static_cast<uint64_t>(Get<int16_t>(bytes, k));
    case LeafType::kUInt16:
      return Get<uint16_t>(bytes, k);
    case LeafType::kInt32:
      return static_cast<uint64_t>(Get<int32_t>(bytes, k));
    case LeafType::kUInt32:
      return Get<uint32_t>(bytes, k);
    case LeafType::kInt64:
      return static_cast<uint64_t>(Get<int64_t>(bytes, k));
    case LeafType::kUInt64:
      return Get<uint64_t>(bytes, k);
    case LeafType::kFloat32:
      return static_cast<uint64_t>(Get<float>(bytes, k));
    case LeafType::kFloat64:
      return static_cast<uint64_t>(Get<double>(bytes, k));
    case LeafType::kString:
    case LeafType::kUnknown:
      return 0;
  }
  return 0;
}

double Column::AsDouble(size_t k) const {
  switch (type) {
    case LeafType::kFloat32:
      return static_cast<double>(Get<float>(bytes, k));
    case LeafType::kFloat64:
      return Get<double>(bytes, k);
    case LeafType::kInt8:
      return Get<int8_t>(bytes, k);
    case LeafType::kInt16:
      return Get<int16_t>(bytes, k);
    case LeafType::kInt32:
      return Get<int32_t>(bytes, k);
    case LeafType::kInt64:
      return static_cast<double>(Get<int64_t>(bytes, k));
    default:
      return static_cast<double>(AsUint64(k));
  }
}

void AppendSwapped(LeafType t, const uint8_t* src, size_t count, ByteVector* dst) {
  AppendByteSwapped(src, count, LeafTypeSize(t), dst);
}

}  // namespace ferry::rootio
