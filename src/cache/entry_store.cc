#include "cache/entry_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/strings.h"
#include "cache/dir_access.h"
#include "cache/page_crc.h"

namespace ferry::cache {
namespace {

// A parent of a cache directory: an ordinary directory, not part of the cache.
Status MakeParentDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return IoError("cannot create directory " + path, errno);
  }
  return OkStatus();
}

// The cache directory itself, with the mode of its kind (dir_access.h).
Status MakeTopDir(const std::string& path, Sharing sharing, gid_t gid) {
  if (::mkdir(path.c_str(), 0700) != 0) {
    return errno == EEXIST ? OkStatus() : IoError("cannot create directory " + path, errno);
  }
  if (sharing == Sharing::kGroup
      && (::chown(path.c_str(), static_cast<uid_t>(-1), gid) != 0
          || ::chmod(path.c_str(), 02770) != 0)) {
    return IoError("cannot make " + path + " a group cache", errno);
  }
  return OkStatus();
}

Status FsyncPath(const std::string& path) {
  Fd fd = FERRY_TRY(Fd::Open(path, O_RDONLY | O_DIRECTORY));
  if (::fsync(fd.get()) != 0) {
    return IoError("fsync " + path, errno);
  }
  return OkStatus();
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

bool DirIsEmpty(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) {
    return true;
  }
  bool empty = true;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

}  // namespace

EntryPaths PathsFor(const std::string& cache_dir, const std::string& key) {
  EntryPaths p;
  p.subdir = cache_dir + "/entries/" + key.substr(0, 2);
  p.base = p.subdir + "/" + key;
  return p;
}

bool IsCacheDir(const std::string& cache_dir) {
  struct stat st = {};
  return ::stat((cache_dir + "/" + kMarkerName).c_str(), &st) == 0;
}

Status PrepareCacheDir(const std::string& cache_dir, Sharing sharing, gid_t gid) {
  if (cache_dir.empty()) {
    return InvalidArgumentError("no cache directory set");
  }
  if (IsCacheDir(cache_dir)) {
    return MakeCacheSubdir(cache_dir + "/entries");
  }
  struct stat st = {};
  if (::stat(cache_dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return InvalidArgumentError(cache_dir + " is not a directory");
    }
    // Another process may have written its marker since the check above: look again before
    // calling the directory foreign.
    if (!DirIsEmpty(cache_dir) && !IsCacheDir(cache_dir)) {
      return InvalidArgumentError(cache_dir
                                  + " is not empty and not a ferry cache (no ferry-cache marker)");
    }
  } else {
    // Create missing parents one level at a time (bounded by the path depth).
    std::string partial;
    for (size_t pos = 1; pos != std::string::npos;) {
      pos = cache_dir.find('/', pos);
      partial = cache_dir.substr(0, pos);
      FERRY_TRY(pos == std::string::npos ? MakeTopDir(partial, sharing, gid)
                                         : MakeParentDir(partial));
      if (pos != std::string::npos) {
        ++pos;
      }
    }
  }
  // The marker first: another process preparing the same directory at the same moment then
  // sees a cache directory, never a foreign non-empty one.
  const std::string marker = cache_dir + "/" + kMarkerName;
  {
    Fd fd = FERRY_TRY(OpenCacheFile(marker, O_WRONLY));
    const std::string_view text = kMarkerText;
    FERRY_TRY(PwriteFull(fd.get(), text.data(), text.size(), 0));
    FERRY_TRY(fd.Close());
  }
  return MakeCacheSubdir(cache_dir + "/entries");
}

IndexStamp StampOf(const std::string& path) {
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0) {
    return {};
  }
  return {st.st_ino, MtimeNs(st), st.st_size};
}

Result<PageIndex> LoadIndex(const std::string& path, IndexStamp* stamp) {
  Fd fd = FERRY_TRY(Fd::Open(path, O_RDONLY));
  struct stat st = {};
  if (::fstat(fd.get(), &st) != 0) {
    return IoError("stat " + path, errno);
  }
  if (st.st_size > (int64_t{1} << 32)) {
    return CorruptionError("page index " + path + " is implausibly large");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  FERRY_TRY_CTX(PreadFull(fd.get(), bytes.data(), bytes.size(), 0), "index " + path);
  if (stamp != nullptr) {
    *stamp = {st.st_ino, MtimeNs(st), st.st_size};
  }
  return FERRY_TRY_CTX(PageIndex::Decode(bytes), "index " + path);
}

Status PublishIndex(const EntryPaths& paths,
                    const PageIndex& index,
                    bool sync,
                    std::vector<uint8_t>& scratch,
                    IndexStamp* stamp) {
  index.Encode(scratch);
  return PublishIndexBytes(paths, scratch, sync, stamp);
}

Status PublishIndexBytes(const EntryPaths& paths,
                         std::span<const uint8_t> scratch,
                         bool sync,
                         IndexStamp* stamp) {
  const std::string tmp = paths.idx() + ".tmp." + std::to_string(::getpid());
  {
    Fd fd = FERRY_TRY(OpenCacheFile(tmp, O_WRONLY | O_TRUNC));
    Status st = PwriteFull(fd.get(), scratch.data(), scratch.size(), 0);
    if (st && sync && ::fsync(fd.get()) != 0) {
      st = IoError("fsync " + tmp, errno);
    }
    if (st) {
      st = fd.Close();
    }
    if (!st) {
      ::unlink(tmp.c_str());
      return st;
    }
  }
  if (::rename(tmp.c_str(), paths.idx().c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return IoError("rename " + tmp, err);
  }
  if (sync) {
    FERRY_TRY(FsyncPath(paths.subdir));
  }
  if (stamp != nullptr) {
    *stamp = StampOf(paths.idx());
  }
  return OkStatus();
}

Status RemoveEntryFiles(const EntryPaths& paths) {
  // The replica goes first: without its index an entry's replica is never served anyway.
  for (const std::string& f : {paths.manifest(), paths.replica_status(), paths.trace(), paths.idx(),
                               paths.data(), paths.frag()}) {
    if (::unlink(f.c_str()) != 0 && errno != ENOENT) {
      return IoError("cannot remove " + f, errno);
    }
  }
  RemoveReplicaData(paths, 0);
  RemoveStaleTemps(paths);
  return OkStatus();
}

namespace {

// Unlinks the entry's files (KEY.<rest>) for which `doomed(rest)` holds. Best effort.
template <typename Pred>
void RemoveEntryFilesIf(const EntryPaths& paths, Pred doomed) {
  const std::string prefix = paths.base.substr(paths.base.rfind('/') + 1) + ".";
  DIR* d = ::opendir(paths.subdir.c_str());
  if (d == nullptr) {
    return;
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.starts_with(prefix) && doomed(name.substr(prefix.size()))) {
      names.push_back(paths.subdir + "/" + std::string(name));
    }
  }
  ::closedir(d);
  for (const std::string& f : names) {
    ::unlink(f.c_str());
  }
}

// True for "<file>.tmp.PID" when process PID no longer exists. A live PID is kept even if it
// was reused by another program: a few KiB left is harmless, a temp file removed under its
// writer is not.
bool IsStaleTemp(std::string_view rest) {
  const size_t at = rest.rfind(".tmp.");
  if (at == std::string_view::npos) {
    return false;
  }
  // Digits only (no sign): kill() of 0 or a negative number names a process group.
  const Result<uint64_t> n = ParseUint(rest.substr(at + 5));
  if (!n || *n == 0 || *n > static_cast<uint64_t>(INT32_MAX)) {
    return false;
  }
  const auto pid = static_cast<pid_t>(*n);
  return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

void RemoveReplicaData(const EntryPaths& paths, uint64_t keep) {
  const std::string kept = keep == 0 ? "" : "rpd." + std::to_string(keep);
  RemoveEntryFilesIf(
      paths, [&](std::string_view rest) { return rest.starts_with("rpd.") && rest != kept; });
}

void RemoveStaleTemps(const EntryPaths& paths) {
  RemoveEntryFilesIf(paths, IsStaleTemp);
}

uint64_t AllocatedBytes(const std::string& path) {
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0) {
    return 0;
  }
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

Result<std::vector<EntryListing>> ScanEntries(const std::string& cache_dir) {
  const std::string root = cache_dir + "/entries";
  DIR* top = ::opendir(root.c_str());
  if (top == nullptr) {
    if (errno == ENOENT) {
      return std::vector<EntryListing>{};
    }
    return IoError("cannot list " + root, errno);
  }
  std::map<std::string, EntryListing> found;
  while (struct dirent* sub = ::readdir(top)) {
    std::string_view sname = sub->d_name;
    if (sname.size() != 2) {
      continue;
    }
    const std::string subdir = root + "/" + std::string(sname);
    DIR* d = ::opendir(subdir.c_str());
    if (d == nullptr) {
      continue;
    }
    while (struct dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      const size_t dot = name.find('.');
      if (dot != 16) {
        continue;  // not KEY.ext (16 hex digits)
      }
      const std::string key(name.substr(0, dot));
      const std::string_view ext = name.substr(dot + 1);
      EntryListing& l = found[key];
      if (l.key.empty()) {
        l.key = key;
        l.paths = PathsFor(cache_dir, key);
      }
      struct stat st = {};
      const std::string full = subdir + "/" + std::string(name);
      if (::stat(full.c_str(), &st) != 0) {
        continue;
      }
      l.inodes += 1;
      // Every file of the entry but its lock, pin and status files takes disk space that counts
      // against the cap: the byte tier, the replica (manifest, data of any generation, a
      // manifest being published) and the access trace.
      if (ext == "idx" || ext == "data" || ext == "frag" || ext == "acc" || ext.starts_with("rpm")
          || ext.starts_with("rpd.")) {
        l.disk_bytes += static_cast<uint64_t>(st.st_blocks) * 512;
      }
      if (ext == "idx") {
        l.has_index = true;
        l.last_read_ns = std::max(l.last_read_ns, MtimeNs(st));
      } else if (ext == "lock") {
        l.last_read_ns = std::max(l.last_read_ns, MtimeNs(st));
      } else if (ext == "pin") {
        l.pinned = true;
      } else if (ext.starts_with("idx.tmp.")) {
        l.disk_bytes += static_cast<uint64_t>(st.st_blocks) * 512;
      }
    }
    ::closedir(d);
  }
  ::closedir(top);
  std::vector<EntryListing> out;
  out.reserve(found.size());
  for (auto& [k, v] : found) {
    out.push_back(std::move(v));
  }
  return out;
}

bool CheckPageBytes(const PageIndex& index,
                    const PageSealer* sealer,
                    uint64_t page,
                    std::span<uint8_t> bytes) {
  if (sealer != nullptr) {
    return sealer->OpenBytes(page, 0, bytes, index.seal(page));
  }
  return PageCrc(bytes.data(), bytes.size()) == index.crc(page);
}

bool CheckFragmentBytes(const PageSealer* sealer,
                        uint64_t page,
                        const Fragment& f,
                        std::span<uint8_t> bytes) {
  if (sealer != nullptr) {
    return sealer->OpenBytes(page, f.lo, bytes, f.seal);
  }
  return PageCrc(bytes.data(), bytes.size()) == f.crc;
}

}  // namespace ferry::cache
