#include "plugin/proxy/segment_crcs.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "cache/page_crc.h"

namespace ferry::proxy {

size_t SegmentCount(uint64_t offset, size_t bytes) {
  if (bytes == 0) {
    return 0;
  }
  return static_cast<size_t>((offset + bytes - 1) / kPgSize - offset / kPgSize + 1);
}

size_t SegmentCrcs(const cache::CachedFile& file,
                   uint64_t offset,
                   std::span<const uint8_t> data,
                   std::span<uint32_t> out) {
  const uint64_t end = offset + data.size();
  const size_t count = std::min(out.size(), SegmentCount(offset, data.size()));
  // The stored CRCs cover the entry's own pages: they answer a segment only when a page is
  // exactly one pgread unit. Kept per thread: an answer costs no allocation once warm.
  thread_local std::vector<std::optional<uint32_t>> stored;
  stored.assign(count, std::nullopt);
  if (file.page_size() == kPgSize) {
    file.StoredPageCrcs(offset / kPgSize, stored);
  }
  size_t used = 0;
  uint64_t pos = offset;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t page = pos / kPgSize;
    const uint64_t stop = std::min(end, (page + 1) * kPgSize);
    // A stored CRC answers a segment that is the whole page: it starts on the page and reaches
    // its end (the end of the file for a short last page).
    const uint64_t page_end = std::min((page + 1) * kPgSize, file.origin_size());
    if (stored[i] && pos == page * kPgSize && stop == page_end) {
      out[i] = *stored[i];
      ++used;
    } else {
      out[i] = cache::PageCrc(data.data() + (pos - offset), stop - pos);
    }
    pos = stop;
  }
  return used;
}

}  // namespace ferry::proxy
