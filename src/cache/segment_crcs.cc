// CachedFile::SegmentCrcs: page checksums for kXR_pgread answers (see cache.h).
#include <algorithm>
#include <shared_mutex>

#include "cache/cache.h"
#include "cache/page_crc.h"

namespace ferry::cache {
namespace {

// kXR_pgread's unit, fixed by the protocol whatever the entry's page size.
constexpr uint64_t kPgSize = 4096;

}  // namespace

size_t CachedFile::SegmentCrcs(uint64_t offset,
                               std::span<const uint8_t> data,
                               std::span<uint32_t> out) {
  const uint64_t end = offset + data.size();
  // The stored CRCs cover the entry's own pages: they answer a segment only when a page is
  // exactly one pgread unit.
  const bool stored = !pass_through() && entry_->page_size() == kPgSize;
  std::shared_lock<std::shared_mutex> lock;
  if (stored) {
    lock = std::shared_lock<std::shared_mutex>(entry_->mu());
  }
  size_t used = 0;
  size_t i = 0;
  for (uint64_t pos = offset; pos < end && i < out.size(); ++i) {
    const uint64_t page = pos / kPgSize;
    const uint64_t stop = std::min(end, (page + 1) * kPgSize);
    const uint8_t* bytes = data.data() + (pos - offset);
    // A stored CRC answers a segment that is the whole page: it starts on the page and reaches
    // its end (the end of the file for a short last page).
    if (stored && pos == page * kPgSize && entry_->index().full(page)
        && stop - pos == entry_->index().PageLength(page)) {
      out[i] = entry_->index().crc(page);
      ++used;
    } else {
      out[i] = PageCrc(bytes, stop - pos);
    }
    pos = stop;
  }
  return used;
}

}  // namespace ferry::cache
