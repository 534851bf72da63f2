// CachedFile::SegmentCrcs: page checksums for kXR_pgread answers (see cache.h).
#include <algorithm>
#include <optional>

#include "cache/cache.h"
#include "cache/page_crc.h"

namespace ferry::cache {
namespace {

// kXR_pgread's unit, fixed by the protocol whatever the entry's page size.
constexpr uint64_t kPgSize = 4096;

// Splits [offset, offset + data.size()) at pgread unit boundaries and writes each segment's CRC
// to `out` (at most out.size() segments): stored(page, length) when it knows one for a segment
// that starts on its page, else computed from the bytes.
template <class Stored>
void ForEachSegment(uint64_t offset,
                    std::span<const uint8_t> data,
                    std::span<uint32_t> out,
                    const Stored& stored) {
  const uint64_t end = offset + data.size();
  size_t i = 0;
  for (uint64_t pos = offset; pos < end && i < out.size(); ++i) {
    const uint64_t page = pos / kPgSize;
    const uint64_t stop = std::min(end, (page + 1) * kPgSize);
    std::optional<uint32_t> crc;
    if (pos == page * kPgSize) {
      crc = stored(page, stop - pos);
    }
    out[i] = crc ? *crc : PageCrc(data.data() + (pos - offset), stop - pos);
    pos = stop;
  }
}

}  // namespace

size_t CachedFile::SegmentCrcs(uint64_t offset,
                               std::span<const uint8_t> data,
                               std::span<uint32_t> out) {
  // The stored CRCs cover the entry's own pages: they answer a segment only when a page is
  // exactly one pgread unit.
  if (pass_through() || entry_->page_size() != kPgSize) {
    ForEachSegment(offset, data, out, [](uint64_t, uint64_t) { return std::optional<uint32_t>(); });
    return 0;
  }
  size_t used = 0;
  ReaderLock lock(entry_->mu());
  const PageIndex& index = entry_->index();
  ForEachSegment(offset, data, out, [&](uint64_t page, uint64_t length) {
    // A stored CRC answers a segment that is the whole page: it starts on the page and reaches
    // its end (the end of the file for a short last page).
    if (index.full(page) && length == index.PageLength(page)) {
      ++used;
      return std::optional<uint32_t>(index.crc(page));
    }
    return std::optional<uint32_t>();
  });
  return used;
}

}  // namespace ferry::cache
