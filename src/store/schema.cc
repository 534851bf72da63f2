#include "store/schema.h"

#include <algorithm>
#include <unordered_set>

namespace ferry::store {

using rootio::LeafType;

namespace {

bool IsStorableType(LeafType t) {
  return t != LeafType::kUnknown && t != LeafType::kString
         && static_cast<uint8_t>(t) <= static_cast<uint8_t>(LeafType::kFloat64);
}

constexpr uint32_t kMaxLen = 1u << 20;

}  // namespace

Result<Schema> Schema::Build(std::vector<ColumnSpec> columns) {
  Schema s;
  s.columns = std::move(columns);
  // Groups: one per distinct counter, in order of first use.
  for (ColumnSpec& c : s.columns) {
    c.group = -1;
    if (!c.jagged()) {
      continue;
    }
    auto it = std::find(s.group_counters.begin(), s.group_counters.end(), c.counter);
    if (it == s.group_counters.end()) {
      s.group_counters.push_back(c.counter);
      c.group = static_cast<int32_t>(s.group_counters.size() - 1);
    } else {
      c.group = static_cast<int32_t>(it - s.group_counters.begin());
    }
  }
  // Record offsets: widest types first so every value is naturally aligned; bools as bits.
  uint32_t pos = kRecordHeaderBytes + 4 * static_cast<uint32_t>(s.group_counters.size());
  pos = (pos + 7) & ~7u;
  for (size_t width : {8u, 4u, 2u, 1u}) {
    for (ColumnSpec& c : s.columns) {
      if (!c.jagged() && !c.is_bool() && c.value_size() == width) {
        c.record_offset = pos;
        pos += static_cast<uint32_t>(width) * c.len;
      }
    }
  }
  uint64_t bit = static_cast<uint64_t>(pos) * 8;
  for (ColumnSpec& c : s.columns) {
    if (!c.jagged() && c.is_bool()) {
      c.record_offset = static_cast<uint32_t>(bit);
      bit += c.len;
    }
  }
  s.record_size = static_cast<uint32_t>(((bit + 7) / 8 + 7) & ~uint64_t{7});
  FERRY_TRY(s.DeriveAndValidate());
  return s;
}

Status Schema::DeriveAndValidate() {
  fixed.clear();
  jagged.clear();
  payload_columns.clear();
  std::unordered_set<std::string_view> names;
  const uint64_t record_bits = static_cast<uint64_t>(record_size) * 8;
  const uint64_t data_start = kRecordHeaderBytes + 4 * static_cast<uint64_t>(group_counters.size());
  if (record_size % 8 != 0 || data_start > record_size) {
    return CorruptionError("record size " + std::to_string(record_size) + " cannot hold "
                           + std::to_string(group_counters.size()) + " group offsets");
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    ColumnSpec& c = columns[i];
    const std::string where = "column " + std::to_string(i) + " '" + c.name + "'";
    if (c.name.empty() || !names.insert(c.name).second) {
      return CorruptionError(where + ": empty or duplicate name");
    }
    if (!IsStorableType(c.type)) {
      return CorruptionError(where + ": unsupported type "
                             + std::to_string(static_cast<int>(c.type)));
    }
    if (c.len == 0 || c.len > kMaxLen) {
      return CorruptionError(where + ": bad length " + std::to_string(c.len));
    }
    c.width = static_cast<uint8_t>(rootio::LeafTypeSize(c.type));
    if (c.kind == ColumnKind::kFixed) {
      uint64_t end = c.is_bool() ? c.record_offset + uint64_t{c.len}
                                 : (uint64_t{c.record_offset} + c.value_size() * c.len) * 8;
      uint64_t start = c.is_bool() ? c.record_offset : uint64_t{c.record_offset} * 8;
      if (start < data_start * 8 || end > record_bits
          || (!c.is_bool() && c.record_offset % c.value_size() != 0)) {
        return CorruptionError(where + ": record offset " + std::to_string(c.record_offset)
                               + " outside the record of " + std::to_string(record_size)
                               + " bytes");
      }
      if (c.counter != -1 || c.group != -1) {
        return CorruptionError(where + ": a fixed column has a counter");
      }
      c.slot = static_cast<int32_t>(fixed.size());
      fixed.push_back(static_cast<int32_t>(i));
    } else if (c.kind == ColumnKind::kJagged) {
      if (c.counter < 0 || static_cast<size_t>(c.counter) >= columns.size()
          || static_cast<size_t>(c.counter) == i) {
        return CorruptionError(where + ": bad counter column " + std::to_string(c.counter));
      }
      const ColumnSpec& k = columns[static_cast<size_t>(c.counter)];
      if (k.kind != ColumnKind::kFixed || k.len != 1 || !rootio::IsIntegerLeafType(k.type)) {
        return CorruptionError(where + ": counter '" + k.name + "' is not a scalar integer");
      }
      if (c.group < 0 || static_cast<size_t>(c.group) >= group_counters.size()
          || group_counters[static_cast<size_t>(c.group)] != c.counter) {
        return CorruptionError(where + ": bad group " + std::to_string(c.group));
      }
      c.slot = static_cast<int32_t>(jagged.size());
      jagged.push_back(static_cast<int32_t>(i));
    } else {
      return CorruptionError(where + ": unknown kind " + std::to_string(static_cast<int>(c.kind)));
    }
    payload_columns.push_back({c.jagged() ? static_cast<uint32_t>(c.group) + 1 : 0,
                               c.len * static_cast<uint32_t>(c.value_size())});  // len <= kMaxLen
  }
  for (size_t g = 0; g < group_counters.size(); ++g) {
    int32_t k = group_counters[g];
    if (k < 0 || static_cast<size_t>(k) >= columns.size()
        || columns[static_cast<size_t>(k)].kind != ColumnKind::kFixed) {
      return CorruptionError("group " + std::to_string(g) + " has a bad counter column");
    }
  }
  return OkStatus();
}

int32_t Schema::Find(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

void Schema::Serialize(ByteWriter& w) const {
  w.U32(static_cast<uint32_t>(columns.size()));
  for (const ColumnSpec& c : columns) {
    w.Str(c.name);
    w.U8(static_cast<uint8_t>(c.type));
    w.U8(static_cast<uint8_t>(c.kind));
    w.U16(0);
    w.U32(c.len);
    w.I32(c.counter);
    w.I32(c.group);
    w.U32(c.record_offset);
  }
  w.U32(static_cast<uint32_t>(group_counters.size()));
  for (int32_t k : group_counters) {
    w.I32(k);
  }
}

Result<Schema> Schema::Parse(ByteReader& r, uint32_t record_size) {
  Schema s;
  s.record_size = record_size;
  uint32_t n = r.U32();
  if (!r.ok() || n > r.remaining() / 18) {
    return CorruptionError("schema column count " + std::to_string(n) + " exceeds its bytes");
  }
  s.columns.resize(n);
  for (ColumnSpec& c : s.columns) {
    c.name = r.Str();
    c.type = static_cast<LeafType>(r.U8());
    c.kind = static_cast<ColumnKind>(r.U8());
    r.U16();
    c.len = r.U32();
    c.counter = r.I32();
    c.group = r.I32();
    c.record_offset = r.U32();
  }
  uint32_t g = r.U32();
  if (!r.ok() || g > r.remaining() / 4) {
    return CorruptionError("schema truncated");
  }
  s.group_counters.resize(g);
  for (int32_t& k : s.group_counters) {
    k = r.I32();
  }
  if (!r.ok()) {
    return CorruptionError("schema truncated");
  }
  FERRY_TRY(s.DeriveAndValidate());
  return s;
}

}  // namespace ferry::store
