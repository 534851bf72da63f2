#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>

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
