// Schema: the stored columns of an event store and where each fixed column sits in the index
// record (docs/format/store.md sections 3, 4 and 7).
//
// Fixed columns (scalars and fixed arrays) live in every index record and in the S blocks;
// jagged columns live in the C blocks, grouped by their counter column. Build() assigns record
// offsets deterministically (8-byte types first, then 4, 2, 1; bools as bits at the end);
// Parse() validates everything a reader relies on, so a parsed Schema is safe to use.
// Plain value; thread-safe to share read-only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_io.h"
#include "base/result.h"
#include "rootio/leaf_type.h"

namespace ferry::store {

enum class ColumnKind : uint8_t { kFixed = 0, kJagged = 1 };

struct ColumnSpec {
  std::string name;
  rootio::LeafType type = rootio::LeafType::kUnknown;
  ColumnKind kind = ColumnKind::kFixed;
  uint32_t len = 1;            // values per event (fixed) or per count unit (jagged)
  int32_t counter = -1;        // jagged: index of the counter column
  int32_t group = -1;          // jagged: group index
  uint32_t record_offset = 0;  // fixed: byte offset in the record (bit position for bools)
  // Derived, not stored: position among the fixed (S chunk order) or jagged (C chunk order)
  // columns.
  int32_t slot = -1;

  bool jagged() const { return kind == ColumnKind::kJagged; }
  bool is_bool() const { return type == rootio::LeafType::kBool; }
  // Derived, not stored: bytes of one value in the payload (bools take one byte there), cached
  // because the per-block loops of picks and scans ask for it for every column.
  uint8_t width = 0;
  size_t value_size() const { return width != 0 ? width : rootio::LeafTypeSize(type); }
};

// Bytes of the fixed part of every record before the group offsets.
constexpr uint32_t kRecordHeaderBytes = 40;

struct Schema {
  std::vector<ColumnSpec> columns;
  std::vector<int32_t> group_counters;  // per group: the counter column
  uint32_t record_size = 0;
  std::vector<int32_t> fixed;   // column indices of fixed columns, schema order
  std::vector<int32_t> jagged;  // column indices of jagged columns, schema order
  // Derived, not stored: each column's bytes in an E block's payload per element, and what
  // counts its elements: 0 for a fixed column (one per event), g + 1 for a column of group g.
  // Eight bytes a column: the layout of every decoded E block walks all of them.
  struct PayloadColumn {
    uint32_t count_slot = 0;
    uint32_t element_bytes = 0;
  };
  std::vector<PayloadColumn> payload_columns;

  // Assigns groups, slots, record offsets and the record size. Columns need name, type, kind,
  // len and (jagged) counter. InvalidArgument for a bad counter or a duplicate name.
  static Result<Schema> Build(std::vector<ColumnSpec> columns);
  // Index of a column by name, or -1.
  int32_t Find(std::string_view name) const;
  size_t groups() const { return group_counters.size(); }
  // Byte offset of group g's element offset in the record.
  static uint32_t GroupOffsetAt(size_t g) {
    return kRecordHeaderBytes + 4 * static_cast<uint32_t>(g);
  }

  void Serialize(ByteWriter& w) const;
  // Parses and validates (types, counters, groups, offsets inside the record).
  static Result<Schema> Parse(ByteReader& r, uint32_t record_size);

 private:
  Status DeriveAndValidate();
};

}  // namespace ferry::store
