#include "rootio/rntuple_page_list.h"

#include <string>

namespace ferry::rootio {
namespace {

// A cluster summary's second word: entry count in bits 0-55, flags in bits 56-63.
constexpr int kClusterFlagsShift = 56;
constexpr uint64_t kEntryCountMask = (uint64_t{1} << kClusterFlagsShift) - 1;
constexpr size_t kClusterSummarySize = 16;  // first entry, count and flags
// A page item is at least an element count and a standard locator.
constexpr size_t kMinPageItem = 4 + kStandardLocatorSize;

Status CheckCount(const Frame& f, size_t pos, size_t min_item, std::string_view what) {
  if (f.items > (f.end - pos) / min_item) {
    return CorruptionError(std::string(what) + ": " + std::to_string(f.items)
                           + " items cannot fit the frame");
  }
  return OkStatus();
}

Result<ColumnPages> ParseColumnPages(LeCursor& c, std::string_view what) {
  Frame f = FERRY_TRY(ReadFrame(c, /*want_list=*/true, what));
  FERRY_TRY(CheckCount(f, c.pos(), kMinPageItem, what));
  ColumnPages col;
  col.pages.reserve(f.items);
  for (uint32_t i = 0; i < f.items; ++i) {
    PageInfo p;
    int32_t n = c.I32();
    p.has_checksum = n < 0;
    p.elements =
        n < 0 ? static_cast<uint32_t>(0 - static_cast<int64_t>(n)) : static_cast<uint32_t>(n);
    p.locator = FERRY_TRY(ReadLocator(c, what));
    col.pages.push_back(p);
  }
  int64_t offset = c.I64();
  col.suppressed = offset < 0;
  if (col.suppressed) {
    // The spec asks writers for INT64_MIN; readers only look at the sign.
    col.element_offset = 0;
  } else {
    col.element_offset = static_cast<uint64_t>(offset);
    col.compression = c.U32();
  }
  if (col.suppressed && !col.pages.empty()) {
    return CorruptionError(std::string(what) + ": a suppressed column lists pages");
  }
  FERRY_TRY(EndFrame(c, f, what));
  return col;
}

Status ParseClusterSummaries(LeCursor& c, std::string_view what, PageList* out) {
  Frame list = FERRY_TRY(ReadFrame(c, /*want_list=*/true, what));
  FERRY_TRY(CheckCount(list, c.pos(), kRecordFramePreamble + kClusterSummarySize, what));
  for (uint32_t i = 0; i < list.items; ++i) {
    Frame rec = FERRY_TRY(ReadFrame(c, /*want_list=*/false, what));
    ClusterInfo info;
    info.first_entry = c.U64();
    uint64_t packed = c.U64();
    info.entries = packed & kEntryCountMask;
    auto flags = static_cast<uint8_t>(packed >> kClusterFlagsShift);
    if ((flags & kClusterFlagSharded) != 0) {
      return UnsupportedError(std::string(what) + ": sharded cluster " + std::to_string(i));
    }
    FERRY_TRY(EndFrame(c, rec, what));
    out->clusters.push_back(std::move(info));
  }
  return EndFrame(c, list, what);
}

}  // namespace

uint64_t ColumnPages::elements() const {
  uint64_t n = 0;
  for (const PageInfo& p : pages) {
    n += p.elements;
  }
  return n;
}

Result<PageList> ParsePageList(std::span<const uint8_t> payload,
                               size_t columns,
                               std::string_view what) {
  LeCursor c(payload);
  PageList out;
  out.header_checksum = c.U64();
  FERRY_TRY(ParseClusterSummaries(c, std::string(what) + " cluster summaries", &out));
  std::string pages_what = std::string(what) + " page locations";
  Frame clusters = FERRY_TRY(ReadFrame(c, /*want_list=*/true, pages_what));
  if (clusters.items != out.clusters.size()) {
    return CorruptionError(pages_what + ": " + std::to_string(clusters.items) + " clusters, "
                           + std::to_string(out.clusters.size()) + " summaries");
  }
  for (ClusterInfo& cluster : out.clusters) {
    Frame cols = FERRY_TRY(ReadFrame(c, /*want_list=*/true, pages_what));
    if (cols.items > columns) {
      return CorruptionError(pages_what + ": " + std::to_string(cols.items)
                             + " columns, the schema has " + std::to_string(columns));
    }
    cluster.columns.reserve(cols.items);
    for (uint32_t i = 0; i < cols.items; ++i) {
      cluster.columns.push_back(FERRY_TRY(ParseColumnPages(c, pages_what)));
    }
    FERRY_TRY(EndFrame(c, cols, pages_what));
  }
  FERRY_TRY(EndFrame(c, clusters, pages_what));
  return out;
}

}  // namespace ferry::rootio
