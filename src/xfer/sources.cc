#include "xfer/sources.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/fd.h"
#include "xfer/paths.h"

namespace ferry::xfer {
namespace {

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') {
    p.pop_back();
  }
  size_t slash = p.rfind('/');
  std::string base = slash == std::string::npos ? p : p.substr(slash + 1);
  if (base == "." || base == ".." || base.empty() || base == "/") {
    // realpath mallocs the result: the unique_ptr frees it.
    std::unique_ptr<char, decltype(&::free)> real(::realpath(path.c_str(), nullptr), &::free);
    if (real != nullptr) {
      std::string r(real.get());
      size_t s = r.rfind('/');
      base = s == std::string::npos ? r : r.substr(s + 1);
    }
  }
  return base;
}

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

Status AddFile(SourceList& out, std::string local, std::string rel, const struct stat& st) {
  if (out.files.size() >= kMaxSourceFiles) {
    return InvalidArgumentError("more than 10 million files");
  }
  out.total_bytes += static_cast<uint64_t>(st.st_size);
  out.files.push_back({std::move(local), std::move(rel), static_cast<uint64_t>(st.st_size),
                       MtimeNs(st), static_cast<uint32_t>(st.st_mode & 07777)});
  return OkStatus();
}

// Depth-first walk in name order; bounded by the depth limit and the file-count limit.
Status Walk(SourceList& out, const std::string& local, const std::string& rel, int depth) {
  if (depth > 256) {
    return InvalidArgumentError("directory tree deeper than 256 levels at " + local);
  }
  std::unique_ptr<DIR, DirCloser> dir(::opendir(local.c_str()));
  if (!dir) {
    return IoError("cannot open directory " + local, errno);
  }
  std::vector<std::string> names;
  for (int n = 0; n < 100'000'000; ++n) {
    errno = 0;
    dirent* e = ::readdir(dir.get());
    if (e == nullptr) {
      if (errno != 0) {
        return IoError("cannot read directory " + local, errno);
      }
      break;
    }
    std::string name = e->d_name;
    if (name != "." && name != "..") {
      names.push_back(std::move(name));
    }
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::string child = std::string(local).append("/").append(name);
    struct stat st;
    if (::fstatat(::dirfd(dir.get()), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      out.skipped.push_back(child + ": " + ErrnoText(errno));
      continue;
    }
    std::string child_rel = std::string(rel).append("/").append(name);
    if (S_ISREG(st.st_mode)) {
      FERRY_TRY(AddFile(out, child, child_rel, st));
    } else if (S_ISDIR(st.st_mode)) {
      FERRY_TRY(Walk(out, child, child_rel, depth + 1));
    } else {
      out.skipped.push_back(child + (S_ISLNK(st.st_mode) ? ": symbolic link" : ": special file"));
    }
  }
  return OkStatus();
}

}  // namespace

Result<SourceList> CollectSources(std::span<const std::string> paths,
                                  std::string_view dest,
                                  bool dest_is_name) {
  if (!dest.empty()) {
    FERRY_TRY_CTX(ValidateRelativePath(dest), "destination");
  }
  SourceList out;
  for (const std::string& p : paths) {
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) {
      int e = errno;
      return Error(e == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "cannot stat " + p, e);
    }
    std::string base = BaseName(p);
    FERRY_TRY_CTX(ValidateRelativePath(base), "source " + p);
    std::string rel = JoinRelative(dest, base);
    if (S_ISREG(st.st_mode) && dest_is_name && paths.size() == 1 && !dest.empty()) {
      rel = std::string(dest);
      out.source_name = base;
    }
    if (S_ISREG(st.st_mode)) {
      FERRY_TRY(AddFile(out, p, rel, st));
    } else if (S_ISDIR(st.st_mode)) {
      std::string local = p;
      while (local.size() > 1 && local.back() == '/') {
        local.pop_back();
      }
      FERRY_TRY(Walk(out, local, rel, 0));
    } else {
      return InvalidArgumentError(p + " is not a regular file or directory");
    }
  }
  // Two sources must not map to the same name.
  std::vector<const std::string*> names;
  names.reserve(out.files.size());
  for (const SourceFile& f : out.files) {
    names.push_back(&f.rel_path);
  }
  std::sort(names.begin(), names.end(), [](auto* a, auto* b) { return *a < *b; });
  for (size_t i = 1; i < names.size(); ++i) {
    if (*names[i] == *names[i - 1]) {
      return InvalidArgumentError("two sources arrive as '" + *names[i] + "'");
    }
  }
  return out;
}

}  // namespace ferry::xfer
