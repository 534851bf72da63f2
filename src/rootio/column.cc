#include "rootio/column.h"

#include <cstring>

#include "base/endian.h"

namespace ferry::rootio {

namespace {
template <class T>
T Get(const ByteVector& b, size_t k) {
  T v;
  std::memcpy(&v, b.data() + k * sizeof(T), sizeof(T));
  return v;
}
// Byte-swapping copy of count big-endian values. Kept free of aliasing so the compiler
// vectorises it (this file is built with -O3; see CMakeLists.txt).
template <class U>
void SwapCopy(uint8_t* __restrict out, const uint8_t* __restrict src, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    U v;
    std::memcpy(&v, src + i * sizeof(U), sizeof(U));
    if constexpr (sizeof(U) == 2) {
      v = __builtin_bswap16(v);
    } else if constexpr (sizeof(U) == 4) {
      v = __builtin_bswap32(v);
    } else {
      v = __builtin_bswap64(v);
    }
    std::memcpy(out + i * sizeof(U), &v, sizeof(U));
  }
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
  size_t size = LeafTypeSize(t);
  if (count == 0 || size == 0) {
    return;  // src may be null for an empty basket
  }
  size_t at = dst->size();
  dst->resize(at + count * size);
  uint8_t* out = dst->data() + at;
  switch (size) {
    case 1:
      std::memcpy(out, src, count);
      break;
    case 2:
      SwapCopy<uint16_t>(out, src, count);
      break;
    case 4:
      SwapCopy<uint32_t>(out, src, count);
      break;
    case 8:
      SwapCopy<uint64_t>(out, src, count);
      break;
    default:
      break;
  }
}

}  // namespace ferry::rootio
