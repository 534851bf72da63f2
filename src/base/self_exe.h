// Where the running program lives, for finding files installed beside it (plug-ins, modules).
// Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ferry {

// The folder of the running executable (from /proc/self/exe), without a trailing '/'; "" when
// it cannot be read.
std::string ExecutableDir();

// Where ferry's libraries (the XrdCl plug-in, the proxy library, the XRootD module) are looked
// for, beside the running binary, in order: PREFIX/lib/ferry (installed: bin and lib/ferry
// under one prefix), PREFIX/lib (a build tree: bin and lib side by side), the binary's own
// folder. Each without a trailing '/'.
std::vector<std::string> LibraryDirs();
// The first LibraryDirs() entry holding `file`; "" when none does.
std::string FindLibrary(const std::string& file);

}  // namespace ferry
