// Who may use a cache directory, and the modes of everything the cache creates in it
// (docs/format/page-store.md, "Permissions"; docs/cache.md, "A cache on a machine several
// users share").
//
// A cache directory is either
// - private (the default): owned by its user, mode 0700, every file 0600 and every directory
//   0700, whatever the umask; or
// - a group cache (`ferry cache enable --shared GROUP`, conf key `shared`): group GROUP, setgid
//   directories 2770, files 0660, so that every member can use one copy of the pages and nobody
//   outside the group can read them.
// The directory's own mode is the gate: with no permission bits for others, nothing below it can
// be reached by a user outside, so one stat decides whether a process may use it. Files and
// directories created below take their mode from their parent: a setgid parent means the group
// cache's modes, any other parent the private ones. The tree thus keeps its mode by itself, and
// every writer (plug-in, proxy, `ferry cache`, the replica builder) follows it without being told.
//
// Thread-safety: free functions, safe to call concurrently.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/fd.h"
#include "base/result.h"

namespace ferry::cache {

enum class Sharing : uint8_t { kPrivate, kGroup };

const char* SharingName(Sharing s);

// What a cache directory is, and whether this process may use it as configured.
struct DirAccess {
  bool exists = false;
  Sharing sharing = Sharing::kPrivate;  // what the directory's mode says it is
  uid_t owner = 0;
  gid_t group = 0;
  mode_t mode = 0;         // permission bits with setgid/sticky (st_mode & 07777)
  std::string group_name;  // of `group`, or its number
  std::string problem;     // empty: this process may use it; else why not, with the fix
};

// Inspects `dir` for a process that expects a private cache (`shared_group` empty) or the group
// cache of `shared_group` (a group name or number). A missing directory has no problem: the
// caller creates it with the right mode.
DirAccess InspectCacheDir(const std::string& dir, const std::string& shared_group);

// InspectCacheDir's problem as an error (kPermission), or OK.
Status CheckCacheDir(const std::string& dir, const std::string& shared_group);

// Resolves a group name or number. kNotFound for an unknown group.
Result<gid_t> GroupId(const std::string& group);

// True when this process has `gid` as its effective or a supplementary group.
bool InGroup(gid_t gid);

// Gives `dir` (which this process owns) the mode of its kind: 0700, or 2770 of `gid` for a group
// cache; then every file and directory below it that this process owns (0600/0700, or
// 0660/2770 of `gid`). `ferry cache enable` uses it to make a directory what it asks for,
// including one an older ferry made 0755. Returns how many paths changed.
Result<uint64_t> ApplyCacheMode(const std::string& dir, Sharing sharing, gid_t gid);

// Creates directory `path` (EEXIST is fine) with its parent's kind of mode (above).
Status MakeCacheSubdir(const std::string& path);

// open(2) of a file in a cache directory with O_CREAT added: a file this call creates gets its
// parent's kind of mode whatever the umask. When root creates a file in a directory owned by
// another account (an administrator's `ferry cache` in a proxy's directory), the file is handed
// to that account, which must keep being able to open it.
Result<Fd> OpenCacheFile(const std::string& path, int flags);

}  // namespace ferry::cache
