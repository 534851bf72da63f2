#include "cache/dir_access.h"

#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "base/strings.h"

namespace ferry::cache {
namespace {

constexpr mode_t kPrivateDir = 0700;
constexpr mode_t kPrivateFile = 0600;
constexpr mode_t kGroupDir = 02770;
constexpr mode_t kGroupFile = 0660;
constexpr mode_t kOthers = 0007;
constexpr mode_t kGroupRwx = 0070;

std::string Octal(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string UserName(uid_t uid) {
  struct passwd pw = {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    return std::string(found->pw_name) + " (uid " + std::to_string(uid) + ")";
  }
  return "uid " + std::to_string(uid);
}

std::string GroupName(gid_t gid) {
  struct group gr = {};
  struct group* found = nullptr;
  std::vector<char> buf(16384);
  if (::getgrgid_r(gid, &gr, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    return found->gr_name;
  }
  return std::to_string(gid);
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A directory whose mode makes it a group cache: setgid, and the group may do everything.
bool IsGroupMode(mode_t mode) {
  return (mode & S_ISGID) != 0 && (mode & kGroupRwx) == kGroupRwx;
}

// The problem of a directory that should be this user's private cache, or "".
std::string PrivateProblem(const std::string& dir, const DirAccess& a) {
  if (IsGroupMode(a.mode)) {
    return dir + " is the group cache of group " + a.group_name + " (mode " + Octal(a.mode)
           + "); to use it, set shared = " + a.group_name + " ('ferry cache enable --dir " + dir
           + " --shared " + a.group_name + "')";
  }
  if (a.owner != ::geteuid()) {
    return dir + " belongs to " + UserName(a.owner) + ", not to you (" + UserName(::geteuid())
           + "): a private cache must be your own; use a directory of your own, or ask its owner "
             "to make it a group cache you are a member of (--shared GROUP)";
  }
  if ((a.mode & 0077) != 0) {
    return dir + " can be read or written by other users (mode " + Octal(a.mode)
           + "): they could read the pages it holds; 'ferry cache enable --dir " + dir
           + "' makes it private (0700), '--shared GROUP' a group cache";
  }
  return "";
}

// The problem of a directory that should be the group cache of `shared_group`, or "".
std::string GroupProblem(const std::string& dir,
                         const std::string& shared_group,
                         const DirAccess& a) {
  auto gid = GroupId(shared_group);
  if (!gid) {
    return "shared = " + shared_group + ": no such group";
  }
  const std::string fix = "; its owner makes it one with 'ferry cache enable --dir " + dir
                          + " --shared " + shared_group + "'";
  if (a.group != *gid) {
    return dir + " belongs to group " + a.group_name + ", not to " + shared_group + fix;
  }
  if (!IsGroupMode(a.mode)) {
    return dir + " is not a group cache (mode " + Octal(a.mode) + ", not 2770)" + fix;
  }
  if ((a.mode & kOthers) != 0) {
    return dir + " can be read or written by users outside group " + shared_group + " (mode "
           + Octal(a.mode) + ")" + fix;
  }
  if (::geteuid() != 0 && !InGroup(*gid)) {
    return "you (" + UserName(::geteuid()) + ") are not a member of group " + shared_group
           + ", whose cache " + dir + " is";
  }
  return "";
}

// Root creating something in a directory of another account hands it to that account (a proxy
// runs as xrootd; an administrator's `ferry cache` must not leave files it cannot open).
void KeepParentOwner(int fd, const std::string& path, const struct stat& parent) {
  if (::geteuid() != 0 || parent.st_uid == 0) {
    return;
  }
  if (fd >= 0) {
    (void)::fchown(fd, parent.st_uid, parent.st_gid);
  } else {
    (void)::lchown(path.c_str(), parent.st_uid, parent.st_gid);
  }
}

// ApplyCacheMode's walk (nftw has no user pointer).
struct ApplyState {
  Sharing sharing = Sharing::kPrivate;
  gid_t gid = 0;
  uint64_t changed = 0;
};
thread_local ApplyState* g_apply = nullptr;

int ApplyOne(const char* path, const struct stat* st, int type, struct FTW* /*ftw*/) {
  if (type != FTW_F && type != FTW_D && type != FTW_DP) {
    return 0;  // symlinks and unreadable entries are left alone
  }
  if (st->st_uid != ::geteuid() && ::geteuid() != 0) {
    return 0;  // another member's file: theirs to fix
  }
  const bool dir = type != FTW_F;
  const bool group = g_apply->sharing == Sharing::kGroup;
  const mode_t want = dir ? (group ? kGroupDir : kPrivateDir) : (group ? kGroupFile : kPrivateFile);
  bool changed = false;
  if (group && st->st_gid != g_apply->gid) {
    changed = ::lchown(path, static_cast<uid_t>(-1), g_apply->gid) == 0;
  }
  if ((st->st_mode & 07777) != want || changed) {
    // chown clears setgid on some filesystems: the mode is set after it.
    changed = ::chmod(path, want) == 0 || changed;
  }
  g_apply->changed += changed ? 1 : 0;
  return 0;
}

}  // namespace

const char* SharingName(Sharing s) {
  return s == Sharing::kGroup ? "group" : "private";
}

Result<gid_t> GroupId(const std::string& group) {
  if (auto n = ParseUint(group); n && *n <= UINT32_MAX) {
    return static_cast<gid_t>(*n);
  }
  struct group gr = {};
  struct group* found = nullptr;
  std::vector<char> buf(16384);
  if (::getgrnam_r(group.c_str(), &gr, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return Error(ErrorCode::kNotFound, "no such group: " + group);
  }
  return found->gr_gid;
}

bool InGroup(gid_t gid) {
  if (::getegid() == gid) {
    return true;
  }
  const int n = ::getgroups(0, nullptr);
  if (n <= 0) {
    return false;
  }
  std::vector<gid_t> groups(static_cast<size_t>(n));
  const int got = ::getgroups(n, groups.data());
  for (int i = 0; i < got; ++i) {
    if (groups[static_cast<size_t>(i)] == gid) {
      return true;
    }
  }
  return false;
}

DirAccess InspectCacheDir(const std::string& dir, const std::string& shared_group) {
  DirAccess a;
  struct stat st = {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      a.problem = "cannot look at " + dir + ": " + ErrnoText(errno);
    }
    return a;
  }
  a.exists = true;
  a.owner = st.st_uid;
  a.group = st.st_gid;
  a.mode = st.st_mode & 07777;
  a.group_name = GroupName(st.st_gid);
  a.sharing = IsGroupMode(a.mode) ? Sharing::kGroup : Sharing::kPrivate;
  if (!S_ISDIR(st.st_mode)) {
    a.problem = dir + " is not a directory";
  } else if (shared_group.empty()) {
    a.problem = PrivateProblem(dir, a);
  } else {
    a.problem = GroupProblem(dir, shared_group, a);
  }
  return a;
}

Status CheckCacheDir(const std::string& dir, const std::string& shared_group) {
  DirAccess a = InspectCacheDir(dir, shared_group);
  if (!a.problem.empty()) {
    return Error(ErrorCode::kPermission, a.problem);
  }
  return OkStatus();
}

Result<uint64_t> ApplyCacheMode(const std::string& dir, Sharing sharing, gid_t gid) {
  ApplyState state{sharing, gid, 0};
  g_apply = &state;
  // Depth-first, directories after their contents (FTW_DEPTH): the top's mode changes last, so
  // a group cache is never announced by its mode before what is inside follows it.
  const int rc = ::nftw(dir.c_str(), ApplyOne, 32, FTW_PHYS | FTW_DEPTH);
  const int err = errno;
  g_apply = nullptr;
  if (rc != 0) {
    return IoError("cannot set the modes below " + dir, err);
  }
  return state.changed;
}

Status MakeCacheSubdir(const std::string& path) {
  struct stat parent = {};
  const bool have_parent = ::stat(Parent(path).c_str(), &parent) == 0;
  const mode_t want = have_parent && IsGroupMode(parent.st_mode) ? kGroupDir : kPrivateDir;
  if (::mkdir(path.c_str(), want & 0777) != 0) {
    if (errno == EEXIST) {
      return OkStatus();
    }
    return IoError("cannot create directory " + path, errno);
  }
  // Ours: the umask may have taken the group's bits, and setgid is set explicitly.
  if ((want & 07077) != 0) {
    (void)::chmod(path.c_str(), want);
  }
  if (have_parent) {
    KeepParentOwner(-1, path, parent);
  }
  return OkStatus();
}

Result<Fd> OpenCacheFile(const std::string& path, int flags) {
  struct stat parent = {};
  const bool have_parent = ::stat(Parent(path).c_str(), &parent) == 0;
  const mode_t want = have_parent && IsGroupMode(parent.st_mode) ? kGroupFile : kPrivateFile;
  Fd fd = FERRY_TRY(Fd::Open(path, flags | O_CREAT, want));
  struct stat st = {};
  if (::fstat(fd.get(), &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 07777) != want) {
    // Created now under a umask that took the group's bits, or left 0644 by an older ferry.
    (void)::fchmod(fd.get(), want);
  }
  if (have_parent && st.st_uid == 0) {
    KeepParentOwner(fd.get(), path, parent);
  }
  return fd;
}

}  // namespace ferry::cache
