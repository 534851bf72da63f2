// BlockCache: a small LRU of decompressed collection blocks, bounded in bytes.
//
// Keys are (shard slot, file offset of the block); a value holds the decompressed chunks of
// the columns decoded so far, in one buffer. Values are shared, so a block handed out stays
// valid after eviction for as long as the caller holds it. Not thread-safe (the Store that
// owns it is single-threaded).
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "base/byte_vector.h"

namespace ferry::store {

// The decoded chunks of one C block: column j (jagged slot) is data[offset[j], offset[j+1])
// when decoded[j].
// Version 3 E blocks: data is the whole shuffled payload, begin/end are indexed by schema
// column, and prefix[g * (events + 1) + i] is the first element of event i in group g.
struct DecodedBlock {
  ByteVector data;              // sized before decoding into it: no zero-fill
  std::vector<uint64_t> begin;  // per jagged slot (versions 1-2) or schema column (3)
  std::vector<uint64_t> end;
  std::vector<bool> decoded;
  std::vector<uint32_t> prefix;  // version 3
  uint32_t events = 0;           // version 3
  uint64_t first_ordinal = 0;    // version 3
  size_t bytes() const { return data.size() + 17 * begin.size() + 4 * prefix.size(); }
};
using Chunk = std::shared_ptr<const DecodedBlock>;

class BlockCache {
 public:
  explicit BlockCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  struct Key {
    uint64_t shard;
    uint64_t offset;
    bool operator<(const Key& o) const {
      return std::tie(shard, offset) < std::tie(o.shard, o.offset);
    }
  };

  // The cached chunk or null.
  Chunk Find(const Key& key);
  // Whether a block that Find missed is worth keeping: only when it was missed before, among
  // the last kRecentMisses misses (those are remembered here, keys only). Picks of scattered
  // events touch each block once; keeping those blocks would fill the cache with memory no
  // one reads again, and allocate it fresh for every block until the cache is full.
  bool Admit(const Key& key);
  static constexpr size_t kRecentMisses = 4096;
  // Inserts (replacing any entry of the key) and evicts the least recently used to fit.
  void Insert(const Key& key, Chunk chunk);
  size_t bytes() const { return bytes_; }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Entry {
    Key key;
    Chunk chunk;
  };
  size_t capacity_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  std::list<Entry> lru_;  // front = most recent
  std::map<Key, std::list<Entry>::iterator> index_;
  std::deque<Key> recent_misses_;  // oldest first, at most kRecentMisses
  std::set<Key> recent_set_;
};

}  // namespace ferry::store
