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

bool BlockCache::Admit(const Key& key) {
  if (capacity_ == 0) {
    return false;
  }
  if (recent_set_.erase(key) != 0) {
    // Left in the queue: a stale entry there erases nothing when it is dropped, at worst it
    // shortens how long the key's next miss is remembered.
    return true;
  }
  if (recent_misses_.size() == kRecentMisses) {
    recent_set_.erase(recent_misses_.front());
    recent_misses_.pop_front();
  }
  recent_misses_.push_back(key);
  recent_set_.insert(key);
  return false;
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
