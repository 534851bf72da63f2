// Fuzz target: the page-index parser of the client cache (docs/format/page-store.md).
// Input: the bytes of a KEY.idx file. A decoded index must re-encode to bytes that decode to
// the same index (pages, CRCs, fragments), and lookups over it must stay in bounds.
#include "cache/page_index.h"

#include <cstdint>
#include <span>
#include <vector>

using ferry::cache::PageIndex;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto index = PageIndex::Decode(std::span<const uint8_t>(data, size));
  if (!index.has_value()) {
    return 0;
  }
  const uint64_t pages = index->page_count();
  uint64_t held = 0;
  for (uint64_t p = 0; p < pages && p < 4096; ++p) {
    const auto cover = index->Cover(p);
    if (cover.hi > index->PageLength(p) || (!cover.empty() && cover.lo >= cover.hi)) {
      __builtin_trap();
    }
    held += cover.hi - cover.lo;
  }
  (void)held;
  std::vector<uint8_t> again;
  index->Encode(again);
  auto back = PageIndex::Decode(again);
  if (!back.has_value() || back->full_pages() != index->full_pages()
      || back->fragments().size() != index->fragments().size()
      || back->info().url != index->info().url || back->held_bytes() != index->held_bytes()) {
    __builtin_trap();
  }
  return 0;
}
