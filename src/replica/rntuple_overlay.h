// The RNTuple part of an overlay (overlay_writer.h). A dataset is an RNTuple,
// a column a physical column (its id), a unit a page: its ordinal among that column's pages,
// cluster by cluster in page-list order. Its records, per RNTuple: its anchor record, its
// footer, then one page list per cluster group, all stored uncompressed; its patches: the
// anchor's keys-list entry.
//
// Why it reads to the original values in every reader:
// - A page is decompressed and compressed again; its element count and checksum flag do not
//   change, its XXH3 (when it has one) is computed over the new bytes. A page that does not
//   shrink is stored raw (stored size == uncompressed size marks it, as in the original).
// - Page lists are written again from the parsed ones with the moved pages' locators. A
//   column's pages in one cluster share one compression field, and jsroot takes 0 there to
//   mean "raw" without looking at the sizes: a column range therefore moves whole (Records
//   refuses a range moved in part), and gets the replica's densest setting.
// - The footer is the original one with each cluster group's page-list link overwritten in
//   place (standard locators only: same length), its checksum computed again; the schema
//   extension in it is never re-serialised.
// - The anchor gets the new footer's place and size and its checksum again. ROOT may have
//   compressed it (then a new one rarely fits the old place), so it moves too: a new
//   uncompressed record under the original key header, the keys list patched to point at it.
// Envelopes are stored uncompressed, so their sizes, and the overlay's layout, are known
// before the first page is placed.
//
// Thread-safety: none (one builder thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "codec/compression.h"
#include "replica/overlay_writer.h"
#include "rootio/key.h"
#include "rootio/rntuple_anchor.h"
#include "rootio/rntuple_page_list.h"
#include "rootio/rntuple_schema.h"
#include "rootio/root_file.h"

namespace ferry::replica {

// What relocating one RNTuple needs from the original file.
struct RntupleRecordSource {
  std::string path;  // "Events", "dir/name"
  rootio::Key key;   // the anchor's key
  rootio::Anchor anchor;
  std::vector<uint8_t> anchor_key;      // the anchor record's key header (fKeylen bytes)
  std::vector<uint8_t> anchor_payload;  // the anchor object, decompressed
  uint64_t entry_offset = 0;            // the anchor's key in its directory's keys list
  std::vector<uint8_t> entry;
  std::vector<uint8_t> footer;  // the whole uncompressed footer envelope
  rootio::Footer parsed_footer;
  std::vector<rootio::PageList> page_lists;   // per cluster group
  std::vector<rootio::ColumnRecord> columns;  // the full schema's physical columns
  std::vector<std::string> column_fields;     // per column: the path of its field

  // One page in the file: (group, cluster in the group, column, page in the range).
  struct PageRef {
    uint32_t group = 0;
    uint32_t cluster = 0;
    uint32_t column = 0;
    uint32_t page = 0;
    uint64_t first_entry = 0;  // the cluster's
  };
  // Every page, per column in ordinal order: pages()[column][ordinal].
  std::vector<std::vector<PageRef>> pages() const;
  const rootio::PageInfo& Page(const PageRef& ref) const {
    return page_lists[ref.group].clusters[ref.cluster].columns[ref.column].pages[ref.page];
  }
};

// Reads one RNTuple's metadata through the file's source (every checksum verified).
// Unsupported when a page list link is not a standard locator.
Result<RntupleRecordSource> LoadRntupleRecord(const rootio::RootFile& f, const std::string& path);

// The RNTuple part of an overlay: dataset d is ntuples[d].
std::unique_ptr<OverlayFormat> MakeRntupleOverlay(std::vector<RntupleRecordSource> ntuples);
// The same for every RNTuple of the file.
Result<std::unique_ptr<OverlayFormat>> LoadRntupleOverlay(const rootio::RootFile& f);

}  // namespace ferry::replica
