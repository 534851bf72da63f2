// Local-file ByteSources: pread (FileSource), mmap (MmapSource), and an in-memory source for
// tests and fuzzing (MemorySource).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/mapped_file.h"
#include "io/byte_source.h"

namespace ferry::io {

// pread(2) on an open descriptor. Thread-safe.
class FileSource final : public ByteSource {
 public:
  static Result<std::unique_ptr<FileSource>> Open(const std::string& path);
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

 protected:
  Status DoReadAt(uint64_t offset, std::span<uint8_t> dest) override;

 private:
  FileSource(Fd fd, uint64_t size, std::string name)
      : fd_(std::move(fd)), size_(size), name_(std::move(name)) {}
  Fd fd_;
  uint64_t size_;
  std::string name_;
};

// A read-only mapping; reads are memcpy and View() is zero-copy. Thread-safe.
class MmapSource final : public ByteSource {
 public:
  static Result<std::unique_ptr<MmapSource>> Open(
      const std::string& path, MappedFile::Advice advice = MappedFile::Advice::kNormal);
  uint64_t size() const override { return map_.size(); }
  const std::string& name() const override { return name_; }
  std::optional<std::span<const uint8_t>> View(uint64_t offset, size_t size) const override;

 protected:
  Status DoReadAt(uint64_t offset, std::span<uint8_t> dest) override;

 private:
  MmapSource(MappedFile map, std::string name) : map_(std::move(map)), name_(std::move(name)) {}
  MappedFile map_;
  std::string name_;
};

// Bytes held in memory (owned copy). For tests, fuzzing and small embedded files.
class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::vector<uint8_t> bytes, std::string name = "memory")
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  std::optional<std::span<const uint8_t>> View(uint64_t offset, size_t size) const override;

 protected:
  Status DoReadAt(uint64_t offset, std::span<uint8_t> dest) override;

 private:
  std::vector<uint8_t> bytes_;
  std::string name_;
};

enum class LocalMode { kPread, kMmap };
Result<std::unique_ptr<ByteSource>> OpenLocal(const std::string& path,
                                              LocalMode mode = LocalMode::kPread);

}  // namespace ferry::io
