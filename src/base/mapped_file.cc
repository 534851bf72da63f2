#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "base/fd.h"

namespace ferry {

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (addr_ != nullptr) {
      ::munmap(addr_, size_);
    }
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (addr_ != nullptr) {
    ::munmap(addr_, size_);
  }
}

Result<MappedFile> MappedFile::Map(const std::string& path, Advice advice) {
  Fd fd = FERRY_TRY(Fd::Open(path, O_RDONLY));
  uint64_t size = FERRY_TRY(FileSize(fd.get()));
  return FERRY_TRY_CTX(MapFd(fd.get(), size, advice), "mmap " + path);
}

void MappedFile::Prefault(std::span<const uint8_t> range) {
#ifdef MADV_POPULATE_READ
  if (range.empty()) {
    return;
  }
  static const auto kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(range.data()) & ~(kPage - 1);
  const auto end = reinterpret_cast<uintptr_t>(range.data() + range.size());
  // NOLINTNEXTLINE(performance-no-int-to-ptr): madvise takes the page-aligned address
  (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ);
#else
  (void)range;
#endif
}

Result<MappedFile> MappedFile::MapFd(int fd, uint64_t size, Advice advice) {
  MappedFile m;
  if (size == 0) {
    return m;
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) {
    return IoError("mmap of " + std::to_string(size) + " bytes failed", errno);
  }
  int how = advice == Advice::kRandom       ? MADV_RANDOM
            : advice == Advice::kSequential ? MADV_SEQUENTIAL
                                            : MADV_NORMAL;
  (void)::madvise(addr, size, how);  // advisory only
  m.addr_ = addr;
  m.size_ = size;
  return m;
}

}  // namespace ferry
