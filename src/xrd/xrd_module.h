// The XRootD source as a loadable module, libferry_xrootd.so.
//
// The ferry binary does not link the XRootD client: its libraries run static initialisers at
// load time (libXrdUtils resolves the host's own name through DNS), which every command
// would pay for, `ferry send` and `ferry --help` included, and which stall for the resolver
// timeout on a host whose DNS does not answer. OpenSource() in the binary loads this module on
// the first root:// URL instead. The module and the binary come from one build, so C++ types
// (io::ByteSource) cross the boundary; the module is never unloaded, as its sources' code must
// stay mapped.
#pragma once

#include <cstddef>
#include <cstdint>

#include "io/byte_source.h"

namespace ferry::xrd {

inline constexpr const char* kModuleFile = "libferry_xrootd.so";
inline constexpr const char* kModuleEntry = "ferry_xrd_open_v1";

// Opens url with XrdSource. On success returns the source (owned by the caller); on failure
// returns nullptr, sets *code to the ErrorCode and *sys_errno to its errno, and writes its
// NUL-terminated message, so that the caller rebuilds the same Error.
using ModuleOpenFn = io::ByteSource* (*)(const char* url,
                                         uint16_t timeout_seconds,
                                         bool enable_plugins,
                                         int* code,
                                         int* sys_errno,
                                         char* message,
                                         size_t message_size);

}  // namespace ferry::xrd
