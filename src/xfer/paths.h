// Confinement of received paths under the receiver's root directory.
//
// A path from the wire is accepted only if it is relative, '/'-separated, and made of
// components that are not empty, ".", or "..", contain no NUL byte, and are at most 255 bytes
// (ValidateRelativePath). Directories are then opened one component at a time from the root's
// descriptor without following symbolic links (openat2 with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS where the kernel has it, openat with O_NOFOLLOW otherwise), and files are
// created with openat(dir_fd, name, O_NOFOLLOW | O_EXCL), so neither "..", an absolute path nor
// a symlink planted inside the root can lead a write outside it.
// Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/fd.h"
#include "base/result.h"

namespace ferry::xfer {

Status ValidateRelativePath(std::string_view path);

// "a" + "b/c" -> "a/b/c"; either may be empty.
std::string JoinRelative(std::string_view a, std::string_view b);

// Splits "a/b/c" into ("a/b", "c"); "c" into ("", "c").
std::pair<std::string_view, std::string_view> SplitDirName(std::string_view path);

// Opens the directory rel_dir ("" = the root itself) beneath root_fd, creating missing
// components with mode 0755 when create is true. A symlink or non-directory on the way is
// kPermission.
Result<Fd> OpenDirBeneath(int root_fd, std::string_view rel_dir, bool create);

// Opens `name` in dir_fd without following a symlink. flags as for openat (O_CLOEXEC and
// O_NOFOLLOW are added).
Result<Fd> OpenInDir(int dir_fd, std::string_view name, int flags, unsigned mode = 0600);

// Hidden sibling names for a file being received and for its resume journal. Fixed length
// (they embed a hash of the name), so they fit NAME_MAX for any valid name.
std::string PartName(std::string_view name);
std::string JournalName(std::string_view name);

}  // namespace ferry::xfer
