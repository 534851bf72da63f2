#include "replica/held_source.h"

#include <shared_mutex>
#include <vector>

namespace ferry::replica {

// The page store's types this file works with.
using cache::Entry;
using cache::PageIndex;
using cache::Piece;
using cache::ServeScratch;

bool HeldSource::Holds(uint64_t offset, uint64_t length) const {
  ReaderLock lock(entry_.mu());
  const PageIndex& index = entry_.index();
  const uint64_t ps = index.page_size();
  const uint64_t end = offset + length;
  for (uint64_t pos = offset; pos < end;) {
    const uint64_t page = pos / ps;
    const uint64_t pend = std::min(end, page * ps + index.PageLength(page));
    if (!index.full(page)) {
      const fetch::PageCover c = index.Cover(page);
      if (c.empty() || page * ps + c.lo > pos || page * ps + c.hi < pend) {
        return false;
      }
    }
    if (pend <= pos) {
      return false;  // past the end of the file
    }
    pos = pend;
  }
  return true;
}

Status HeldSource::DoReadAt(uint64_t offset, std::span<uint8_t> dest) {
  ServeScratch scratch;
  std::vector<Piece> missing;
  uint64_t served = 0;
  {
    ReaderLock lock(entry_.mu());
    served = FERRY_TRY(entry_.Serve(0, offset, dest, scratch, missing));
  }
  entry_.DropPages(scratch.bad);
  if (served != dest.size() || !missing.empty()) {
    return NotFoundError("bytes " + std::to_string(offset) + "+" + std::to_string(dest.size())
                         + " of " + name_ + " are not held by the cache");
  }
  return OkStatus();
}

}  // namespace ferry::replica
