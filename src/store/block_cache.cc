#include "store/block_cache.h"

namespace ferry::store {

Chunk BlockCache::Find(const Key& key) {
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->chunk;
}

void BlockCache::Insert(const Key& key, Chunk chunk) {
  if (capacity_ == 0 || chunk == nullptr || chunk->bytes() > capacity_) {
    return;
  }
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->chunk->bytes();
    lru_.erase(it->second);
    index_.erase(it);
  }
  bytes_ += chunk->bytes();
  lru_.push_front({key, std::move(chunk)});
  index_[key] = lru_.begin();
  while (bytes_ > capacity_ && !lru_.empty()) {
    bytes_ -= lru_.back().chunk->bytes();
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

}  // namespace ferry::store
