// CachedSource: an io::ByteSource over a CachedFile, so that ROOT structures parse and ferry's
// readers run through the cache engine in-process. Test support only: the plug-in and the
// proxy read through CachedFile directly. ReadV is one CachedFile::ReadV
// (so one access-trace record, as an application's vector read).
// Lifetime: borrows the CachedFile. Thread-safety: as CachedFile (reads may run concurrently).
#pragma once

#include <string>

#include "cache/cache.h"
#include "io/byte_source.h"

namespace ferry::cache {

class CachedSource final : public io::ByteSource {
 public:
  explicit CachedSource(CachedFile& file, std::string name = "cached")
      : file_(file), name_(std::move(name)) {}
  uint64_t size() const override { return file_.size(); }
  const std::string& name() const override { return name_; }

 protected:
  Status DoReadAt(uint64_t offset, std::span<uint8_t> dest) override {
    return file_.Read(offset, dest);
  }
  void DoReadV(std::span<io::ReadRequest> requests) override { (void)file_.ReadV(requests); }

 private:
  CachedFile& file_;
  std::string name_;
};

}  // namespace ferry::cache
