#include "xfer/paths.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "base/hash.h"
#include "xfer/protocol.h"

namespace ferry::xfer {
namespace {

// -1 unknown, 0 no, 1 yes.
std::atomic<int> g_have_openat2{-1};

int OpenBeneath(int dir_fd, const std::string& name, int flags) {
#ifdef SYS_openat2
  if (g_have_openat2.load(std::memory_order_relaxed) != 0) {
    open_how how{};
    how.flags = static_cast<uint64_t>(static_cast<unsigned>(flags | O_CLOEXEC | O_NOFOLLOW));
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = ::syscall(SYS_openat2, dir_fd, name.c_str(), &how, sizeof how);
    if (fd >= 0) {
      g_have_openat2.store(1, std::memory_order_relaxed);
      return static_cast<int>(fd);
    }
    if (errno != ENOSYS && errno != EPERM) {  // EPERM: seccomp filters may refuse it
      return -1;
    }
    g_have_openat2.store(0, std::memory_order_relaxed);
  }
#endif
  return ::openat(dir_fd, name.c_str(), flags | O_CLOEXEC | O_NOFOLLOW);
}

Error OpenError(std::string_view what, std::string_view name, int e) {
  if (e == ELOOP || e == ENOTDIR || e == EXDEV) {
    return {ErrorCode::kPermission,
            std::string(what) + " '" + std::string(name)
                + "' is a symbolic link or not a directory (refused: paths stay under the root)",
            e};
  }
  if (e == ENOSPC || e == EDQUOT) {
    return {ErrorCode::kNoSpace, std::string(what) + " '" + std::string(name) + "'", e};
  }
  if (e == EACCES || e == EPERM) {
    return {ErrorCode::kPermission, std::string(what) + " '" + std::string(name) + "'", e};
  }
  return IoError(std::string(what) + " '" + std::string(name) + "'", e);
}

}  // namespace

Status ValidateRelativePath(std::string_view path) {
  if (path.empty()) {
    return InvalidArgumentError("empty path");
  }
  if (path.size() > kMaxPathBytes) {
    return InvalidArgumentError("path longer than 4096 bytes");
  }
  if (path.front() == '/') {
    return Error(ErrorCode::kPermission, "absolute path '" + std::string(path) + "' refused");
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) {
      end = path.size();
    }
    std::string_view c = path.substr(start, end - start);
    if (c.empty()) {
      return InvalidArgumentError("path '" + std::string(path) + "' has an empty component");
    }
    if (c == "." || c == "..") {
      return Error(ErrorCode::kPermission,
                   "path '" + std::string(path) + "' contains '" + std::string(c) + "' (refused)");
    }
    if (c.size() > 255) {
      return InvalidArgumentError("path component longer than 255 bytes");
    }
    if (c.find('\0') != std::string_view::npos) {
      return InvalidArgumentError("path contains a NUL byte");
    }
    start = end + 1;
  }
  return OkStatus();
}

std::string JoinRelative(std::string_view a, std::string_view b) {
  if (a.empty()) {
    return std::string(b);
  }
  if (b.empty()) {
    return std::string(a);
  }
  std::string out(a);
  out += '/';
  out += b;
  return out;
}

std::pair<std::string_view, std::string_view> SplitDirName(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) {
    return {std::string_view(), path};
  }
  return {path.substr(0, slash), path.substr(slash + 1)};
}

Result<Fd> OpenDirBeneath(int root_fd, std::string_view rel_dir, bool create) {
  Fd cur(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (!cur.valid()) {
    return IoError("dup of the root directory failed", errno);
  }
  size_t start = 0;
  // Bounded by the number of components (a validated path has at most 2048).
  while (start < rel_dir.size()) {
    size_t end = rel_dir.find('/', start);
    if (end == std::string_view::npos) {
      end = rel_dir.size();
    }
    std::string comp(rel_dir.substr(start, end - start));
    if (create && ::mkdirat(cur.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) {
      return OpenError("cannot create directory", rel_dir.substr(0, end), errno);
    }
    int fd = OpenBeneath(cur.get(), comp, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
      return OpenError("cannot open directory", rel_dir.substr(0, end), errno);
    }
    cur = Fd(fd);
    start = end + 1;
  }
  return cur;
}

Result<Fd> OpenInDir(int dir_fd, std::string_view name, int flags, unsigned mode) {
  std::string n(name);
  int fd;
  do {
    fd = ::openat(dir_fd, n.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) {
      return Error(ErrorCode::kNotFound, "no file '" + n + "'", e);
    }
    return OpenError("cannot open file", name, e);
  }
  return Fd(fd);
}

std::string PartName(std::string_view name) {
  return ".ferry-" + DigestHex(hash::Xxh3(name.data(), name.size())) + ".part";
}

std::string JournalName(std::string_view name) {
  return ".ferry-" + DigestHex(hash::Xxh3(name.data(), name.size())) + ".journal";
}

}  // namespace ferry::xfer
