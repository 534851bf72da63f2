#include "io/local_source.h"

#include <fcntl.h>

#include <cstring>

namespace ferry::io {

Result<std::unique_ptr<FileSource>> FileSource::Open(const std::string& path) {
  Fd fd = FERRY_TRY(Fd::Open(path, O_RDONLY));
  uint64_t size = FERRY_TRY_CTX(FileSize(fd.get()), path);
  return std::unique_ptr<FileSource>(new FileSource(std::move(fd), size, path));
}

Status FileSource::DoReadAt(uint64_t offset, std::span<uint8_t> dest) {
  return PreadFull(fd_.get(), dest.data(), dest.size(), offset);
}

Result<std::unique_ptr<MmapSource>> MmapSource::Open(const std::string& path,
                                                     MappedFile::Advice advice) {
  MappedFile map = FERRY_TRY(MappedFile::Map(path, advice));
  return std::unique_ptr<MmapSource>(new MmapSource(std::move(map), path));
}

std::optional<std::span<const uint8_t>> MmapSource::View(uint64_t offset, size_t size) const {
  if (offset > map_.size() || size > map_.size() - offset) {
    return std::nullopt;
  }
  return map_.data().subspan(offset, size);
}

Status MmapSource::DoReadAt(uint64_t offset, std::span<uint8_t> dest) {
  std::memcpy(dest.data(), map_.data().data() + offset, dest.size());
  return OkStatus();
}

std::optional<std::span<const uint8_t>> MemorySource::View(uint64_t offset, size_t size) const {
  if (offset > bytes_.size() || size > bytes_.size() - offset) {
    return std::nullopt;
  }
  return std::span<const uint8_t>(bytes_).subspan(offset, size);
}

Status MemorySource::DoReadAt(uint64_t offset, std::span<uint8_t> dest) {
  std::memcpy(dest.data(), bytes_.data() + offset, dest.size());
  return OkStatus();
}

Result<std::unique_ptr<ByteSource>> OpenLocal(const std::string& path, LocalMode mode) {
  if (mode == LocalMode::kMmap) {
    return std::unique_ptr<ByteSource>(FERRY_TRY(MmapSource::Open(path)));
  }
  return std::unique_ptr<ByteSource>(FERRY_TRY(FileSource::Open(path)));
}

}  // namespace ferry::io
