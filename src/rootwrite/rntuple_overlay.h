// RntupleOverlayWriter: the overlay of a replica's virtual file for the RNTuples of a ROOT file,
// as OverlayWriter (overlay.h) is for its TTrees. It does no I/O: the caller hands it stored
// pages and writes what it returns after the original file's end.
//
// Virtual file layout (docs/format/replica.md, "RNTuple"):
//
//   [0, original_size)               the original bytes; patches: the anchors' keys-list
//                                    entries, the file header
//   [original_size, pages_begin)     per RNTuple: its anchor record, its footer, then one page
//                                    list per cluster group, all stored uncompressed
//   [pages_begin, virtual_size)      re-encoded pages, in the order they were added
//
// Why it reads to the original values in every reader:
// - A page is decompressed and compressed again; its element count and checksum flag do not
//   change, its XXH3 (when it has one) is computed over the new bytes. A page that does not
//   shrink is stored raw (stored size == uncompressed size marks it, as in the original).
// - Page lists are written again from the parsed ones with the moved pages' locators. A
//   column's pages in one cluster share one compression field, and jsroot takes 0 there to
//   mean "raw" without looking at the sizes: a column range therefore moves whole (Finish
//   refuses a range moved in part), and gets the replica's densest setting.
// - The footer is the original one with each cluster group's page-list link overwritten in
//   place (standard locators only: same length), its checksum computed again; the schema
//   extension in it is never re-serialised.
// - The anchor gets the new footer's place and size and its checksum again. ROOT may have
//   compressed it (then a new one rarely fits the old place), so it moves too: a new
//   uncompressed record under the original key header, the keys list patched to point at it.
//   The file header's fEND becomes the virtual size.
// Envelopes are stored uncompressed, so their sizes, and the overlay's layout, are known
// before the first page is placed.
//
// Pages are named as units of the replica manifest: tree = the RNTuple's number, branch = the
// physical column id, basket = the page's ordinal among that column's pages, cluster by
// cluster in page-list order.
//
// Thread-safety: none (one builder thread).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/byte_vector.h"
#include "base/result.h"
#include "codec/compression.h"
#include "rootio/key.h"
#include "rootio/rntuple_anchor.h"
#include "rootio/rntuple_page_list.h"
#include "rootio/rntuple_schema.h"
#include "rootio/root_file.h"
#include "rootwrite/overlay.h"

namespace ferry::rootwrite {

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

class RntupleOverlayWriter final : public UnitOverlayWriter {
 public:
  RntupleOverlayWriter(uint64_t original_size, codec::Setting setting)
      : original_size_(original_size), setting_(setting), candidates_{setting} {}

  // Registers an RNTuple (before Start); returns its number.
  uint32_t AddRntuple(RntupleRecordSource source);
  uint32_t ntuple_count() const { return static_cast<uint32_t>(ntuples_.size()); }
  const RntupleRecordSource& source(uint32_t ntuple) const { return ntuples_[ntuple].src; }
  void Start() override;
  uint64_t baskets_begin() const override { return pages_begin_; }

  // Page `ordinal` of column `column` of RNTuple `ntuple`; `stored`: its bytes as the original
  // file holds them (the checksum included). InvalidArgument for a page already added or out of
  // range; Corruption for a page that does not check or decompress.
  Result<MovedBasket> AddBasket(uint32_t ntuple,
                                int32_t column,
                                int32_t ordinal,
                                std::span<const uint8_t> stored,
                                ByteVector* out) override;
  // A page already re-encoded (copied from an earlier replica): appended as it is.
  Result<MovedBasket> AddEncodedBasket(uint32_t ntuple,
                                       int32_t column,
                                       int32_t ordinal,
                                       std::span<const uint8_t> encoded,
                                       const codec::Setting& setting,
                                       ByteVector* out) override;
  // A page as the original stores it (its checksum included), appended as it is; its range
  // keeps the original compression field, and must move whole as stored.
  Result<MovedBasket> AddStoredBasket(uint32_t ntuple,
                                      int32_t column,
                                      int32_t ordinal,
                                      std::span<const uint8_t> stored,
                                      ByteVector* out) override;
  void set_encodings(std::vector<codec::Setting> candidates, EncodingChooser choose) override {
    candidates_ = std::move(candidates);
    chooser_ = std::move(choose);
  }
  // The patches and records. `head`: the original file's first bytes (100 are enough).
  // InvalidArgument when a column range moved only in part.
  Result<Overlay> Finish(std::span<const uint8_t> head) override;

 private:
  struct Moved {
    uint64_t offset = 0;
    uint64_t size = 0;  // the locator's size (the checksum excluded)
    bool as_stored = false;
  };
  struct NtupleState {
    RntupleRecordSource src;
    std::vector<std::vector<RntupleRecordSource::PageRef>> pages;  // per column, by ordinal
    std::vector<std::vector<Moved>> moved;                         // same shape; size 0: not
    uint64_t anchor_at = 0;
    uint64_t footer_at = 0;
    std::vector<uint64_t> page_list_at;  // per group
  };

  Result<const RntupleRecordSource::PageRef*> Claim(uint32_t ntuple,
                                                    int32_t column,
                                                    int32_t ordinal) const;
  MovedBasket Place(uint32_t ntuple, int32_t column, int32_t ordinal, uint64_t size, bool sum);
  // The page lists with the moved pages' locators and settings; InvalidArgument for a range
  // moved in part, or in part as stored.
  Result<std::vector<std::vector<uint8_t>>> NewPageLists(const NtupleState& n) const;
  // The anchor's new record (key header + patched object) and the keys-list patch.
  Result<std::pair<std::vector<uint8_t>, Patch>> AnchorRecord(const NtupleState& n,
                                                              uint64_t footer_bytes) const;

  const uint64_t original_size_;
  const codec::Setting setting_;
  std::vector<NtupleState> ntuples_;
  uint64_t pages_begin_ = 0;
  uint64_t end_ = 0;
  bool started_ = false;
  std::vector<codec::Setting> candidates_;
  EncodingChooser chooser_;
  ByteVector raw_;
  ByteVector candidate_;
  ByteVector scratch_;
};

// The whole virtual file of `file` built in memory, every page of every RNTuple moved, in
// column order. For tests and `ferry root relocate`.
Result<std::vector<uint8_t>> RelocateRntuplesInMemory(std::span<const uint8_t> file,
                                                      const codec::Setting& setting);

}  // namespace ferry::rootwrite
