// Where the running program lives, for finding files installed beside it (plug-ins, modules).
// Thread-safe.
#pragma once

#include <string>

namespace ferry {

// The folder of the running executable (from /proc/self/exe), without a trailing '/'; "" when
// it cannot be read.
std::string ExecutableDir();

}  // namespace ferry
