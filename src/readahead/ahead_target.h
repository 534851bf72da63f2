// AheadTarget: what read-ahead (file_ahead.h) needs of the file it reads ahead for — its size
// and layout, reads of its own that the application does not see, and fetches into the page
// store. CachedFile implements it for the client plug-in; read-ahead knows nothing else of the
// handle, so any host of a cached file can drive the same engine.
//
// Thread-safety: every method may be called from read-ahead's threads while the application
// reads the same file.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "fetch/range.h"
#include "io/byte_source.h"

namespace ferry::readahead {

class AheadTarget {
 public:
  virtual ~AheadTarget() = default;

  // Bytes of the file the reader sees (a replica's virtual file is larger than the origin's).
  virtual uint64_t size() const = 0;
  // Bytes of the remote file.
  virtual uint64_t origin_size() const = 0;
  // The reader sees a replica's virtual file: its metadata already lies in the cache.
  virtual bool virtual_file() const = 0;
  // Every byte of the requests is in the cache (no I/O).
  virtual bool AllHeld(std::span<const io::ReadRequest> requests) = 0;
  // Reads for read-ahead's own purposes (tree metadata): not seen by read-ahead, not traced.
  virtual Status ReadUntracked(std::span<io::ReadRequest> requests) = 0;
  // Fetches what of `ranges` the cache neither holds nor has in flight into the page store;
  // `fetched` receives the chunks fetched. Never fails: what is not fetched is read later.
  virtual void Prefetch(std::span<const fetch::Range> ranges,
                        std::vector<fetch::Range>& fetched) = 0;
  // Read-ahead's accounting: `hits` application reads of units it fetched, `unused_bytes`
  // bytes it fetched that were not read.
  virtual void CountAhead(uint64_t hits, uint64_t unused_bytes) = 0;
};

}  // namespace ferry::readahead
