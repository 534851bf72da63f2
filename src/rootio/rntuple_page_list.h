// The RNTuple page-list envelope: for each cluster of a cluster group, its entry range and,
// per physical column, where the column's pages lie.
//
//   u64 header checksum
//   list of cluster summaries:  u64 first entry, u64 (bits 0-55 entry count, 56-63 flags)
//   list (clusters) of lists (columns) of lists (pages):
//     page:    i32 element count (negative: an XXH3-64 follows the page's bytes), locator
//     after a column's page list, inside its frame: i64 element offset (negative: the column
//     is suppressed in this cluster), then, unless suppressed, u32 compression settings
//
// Format: docs/format/rntuple.md ("Page list").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "rootio/rntuple_frame.h"

namespace ferry::rootio {

// A page with a checksum is stored with its XXH3 after it, outside the locator's size.
inline constexpr size_t kPageChecksumSize = 8;

struct PageInfo {
  uint32_t elements = 0;
  bool has_checksum = false;
  Locator locator;
  // Its bytes in the file, the checksum included.
  uint64_t stored_bytes() const { return locator.size + (has_checksum ? kPageChecksumSize : 0); }
};

struct ColumnPages {
  std::vector<PageInfo> pages;
  uint64_t element_offset = 0;  // first element of the column in this cluster
  bool suppressed = false;
  uint32_t compression = 0;  // 100 * algorithm + level

  uint64_t elements() const;
};

struct ClusterInfo {
  uint64_t first_entry = 0;
  uint64_t entries = 0;
  std::vector<ColumnPages> columns;  // by physical column id
};

// The cluster summary flag that announces sharded clusters (not defined in format 1.0).
constexpr uint8_t kClusterFlagSharded = 0x01;

struct PageList {
  uint64_t header_checksum = 0;
  std::vector<ClusterInfo> clusters;
};

// Parses a page-list payload; `columns` is the number of physical columns of the schema. A
// cluster may list fewer columns (those added later by a schema extension are then absent).
Result<PageList> ParsePageList(std::span<const uint8_t> payload,
                               size_t columns,
                               std::string_view what);

}  // namespace ferry::rootio
