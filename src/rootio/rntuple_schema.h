// The RNTuple header and footer envelopes: the schema (fields, columns, alias columns, extra
// type information), its extension in the footer, and the cluster groups.
//
// Field record:   u32 field version, u32 type version, u32 parent id, u16 role, u16 flags,
//                 strings name, type, type alias, description; then u64 array size (flag 1),
//                 u32 source field id (flag 2), u32 ROOT type checksum (flag 4)
// Column record:  u16 type, u16 bits on storage, u32 field id, u16 flags, u16 representation
//                 index; then i64 first element index (flag 1), f64 min, f64 max (flag 2)
// Alias column:   u32 physical column id, u32 field id
// Extra type info: u32 content id, u32 type version, string type name, content
// Cluster group:  u64 min entry, u64 entry span, u32 cluster count, page-list envelope link
//
// Each record is a record frame inside a list frame. IDs are positions: the header's lists
// first, then the footer's schema extension. Format: docs/format/rntuple.md ("Header",
// "Footer").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "rootio/rntuple_column_type.h"
#include "rootio/rntuple_frame.h"

namespace ferry::rootio {

enum class FieldRole : uint16_t {
  kLeaf = 0,
  kCollection = 1,
  kRecord = 2,
  kVariant = 3,
  kStreamer = 4,
};

struct FieldFlags {
  static constexpr uint16_t kRepetitive = 0x01;
  static constexpr uint16_t kProjected = 0x02;
  static constexpr uint16_t kTypeChecksum = 0x04;
};

struct ColumnFlags {
  static constexpr uint16_t kDeferred = 0x01;
  static constexpr uint16_t kRange = 0x02;
};

struct FieldRecord {
  uint32_t field_version = 0;
  uint32_t type_version = 0;
  uint32_t parent_id = 0;
  uint16_t role = 0;  // FieldRole; kept raw so an unknown role can be reported
  uint16_t flags = 0;
  std::string name;
  std::string type_name;
  std::string type_alias;
  std::string description;
  uint64_t array_size = 0;       // repetitive fields
  uint32_t source_field_id = 0;  // projected fields
  uint32_t type_checksum = 0;

  bool repetitive() const { return (flags & FieldFlags::kRepetitive) != 0; }
  bool projected() const { return (flags & FieldFlags::kProjected) != 0; }
};

struct ColumnRecord {
  uint16_t type = 0;  // ColumnType; raw, see FindColumnType
  uint16_t bits = 0;  // bits on storage per element
  uint32_t field_id = 0;
  uint16_t flags = 0;
  uint16_t representation = 0;
  // Elements before this index were never written: they read as zeros. Negative: the column
  // is deferred and also suppressed up to that point.
  int64_t first_element = 0;
  double min = 0;  // value range (Real32Quant)
  double max = 0;
};

struct AliasColumn {
  uint32_t physical_id = 0;
  uint32_t field_id = 0;
};

struct ExtraTypeInfo {
  uint32_t content_id = 0;
  uint32_t type_version = 0;
  std::string type_name;
};

struct Schema {
  std::vector<FieldRecord> fields;
  std::vector<ColumnRecord> columns;
  std::vector<AliasColumn> aliases;
  std::vector<ExtraTypeInfo> extra;
};

struct Header {
  std::string name;
  std::string description;
  std::string writer;
  Schema schema;
};

struct ClusterGroup {
  uint64_t min_entry = 0;
  uint64_t entry_span = 0;
  uint32_t clusters = 0;
  EnvelopeLink page_list;
  // Where the page-list link starts in the footer's payload (a replica rewrites it in place).
  size_t link_at = 0;
};

struct Footer {
  uint64_t header_checksum = 0;
  Schema extension;  // fields, columns and aliases appended to the header's schema
  std::vector<ClusterGroup> groups;
};

// Parse an envelope's payload (between preamble and checksum). `what` names the envelope.
Result<Header> ParseHeader(std::span<const uint8_t> payload, std::string_view what);
Result<Footer> ParseFooter(std::span<const uint8_t> payload, std::string_view what);

}  // namespace ferry::rootio
