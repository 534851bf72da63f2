// ferry's version: the CMake project version (CMakeLists.txt, the only place it is written) and
// the git description of the source tree it was built from ("" outside a git checkout).
// Generated into the build tree from version.cc.in at configure time (`make build` configures
// every time, so the description follows the checkout). Thread-safe.
#pragma once

namespace ferry {

const char* Version();         // "0.1.0"
const char* GitDescription();  // "v0.1.0-12-gabcdef0-dirty", or ""

}  // namespace ferry
