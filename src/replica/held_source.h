// HeldSource: the bytes a cache entry holds, as an io::ByteSource (no origin behind it). The
// replica builder parses ROOT structures and reads baskets through it.
//
// A read is served from the entry's pages and fragments, each checked against its CRC32C; if
// any byte of it is not held (or fails its check), the read is kNotFound ("not held"), never a
// partial answer. size() is the remote file's size.
// Thread-safety: reads may run concurrently (the Entry's read side is thread-safe).
// Lifetime: borrows the Entry, which must be open (Entry::OpenExisting or Open).
#pragma once

#include <string>

#include "cache/entry.h"
#include "io/byte_source.h"

namespace ferry::replica {

class HeldSource final : public io::ByteSource {
 public:
  explicit HeldSource(cache::Entry& entry) : entry_(entry), name_(entry.url()) {}

  uint64_t size() const override { return entry_.size(); }
  const std::string& name() const override { return name_; }
  // True when every byte of [offset, offset + length) is held (index only, no I/O).
  bool Holds(uint64_t offset, uint64_t length) const;

 protected:
  Status DoReadAt(uint64_t offset, std::span<uint8_t> dest) override;

 private:
  cache::Entry& entry_;
  std::string name_;
};

}  // namespace ferry::replica
