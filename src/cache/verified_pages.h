// VerifiedPages: the pages of one entry incarnation (one epoch) whose held bytes this process
// read back from the data file and checked against their CRC since the page's index state last
// changed. The site proxy sends such pages to clients without reading them into its own memory
// (sendfile, plugin/proxy/zero_copy.h), and reads them back for the reads it copies without
// checking them again (entry_serve.cc), so this is the only check those bytes get: the rule is
// "checked once by this process, since it was stored or its entry opened", and anything not
// marked takes the verifying read path (docs/format/page-store.md, "Zero-copy serving").
//
// A PageIndex with one attached clears a page's mark whenever the page changes (full, new
// fragment, dropped), so a mark never outlives the bytes it vouches for; the read path marks
// pages after their check. The Cache keeps the set of an entry beyond its last handle (a warm
// pass opens every file anew), keyed by entry and epoch.
//
// Memory: one bit per page (32 KiB per GiB of file at 4 KiB pages). Thread-safety: every method
// may be called concurrently (atomic words, relaxed: a mark is only ever read after the
// reader's own check or under the entry's lock, which orders it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace ferry::cache {

class VerifiedPages {
 public:
  VerifiedPages(uint64_t epoch, uint64_t page_count);

  uint64_t epoch() const { return epoch_; }
  uint64_t page_count() const { return page_count_; }
  void Mark(uint64_t page);
  void Clear(uint64_t page);
  void ClearAll();
  bool marked(uint64_t page) const;
  // True when every page of [first, last] is marked.
  bool AllMarked(uint64_t first, uint64_t last) const;

 private:
  const uint64_t epoch_;
  const uint64_t page_count_;
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
};

}  // namespace ferry::cache
