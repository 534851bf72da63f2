// OpenSource: one entry point from a path or URL to a ByteSource.
//
//   local path, or file:///path          -> io::FileSource (pread) or io::MmapSource
//   root://, roots://, xroot://, xroots:// -> xrd::XrdSource (XrdCl, with client plug-ins)
//   anything else with "scheme://"       -> kUnsupported
//
// It lives in src/xrd so that the layers below (io, rootio) never depend on XRootD; callers
// that accept URLs (the CLI, the analysis) link ferry_xrd. When ferry is built without XRootD
// (FERRY_BUILD_PLUGIN=OFF), root:// URLs give kUnsupported.
// Thread-safety: a free function; the returned source is as thread-safe as its type.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "io/byte_source.h"
#include "io/local_source.h"

namespace ferry::xrd {

struct OpenOptions {
  io::LocalMode local_mode = io::LocalMode::kPread;
  uint16_t timeout_seconds = 60;  // per XRootD request
  bool enable_plugins = true;     // XrdCl client plug-ins (the ferry cache) for root:// URLs
};

// True for root://, roots://, xroot:// and xroots:// (case-insensitive scheme).
bool IsXrootdUrl(std::string_view path_or_url);

Result<std::unique_ptr<io::ByteSource>> OpenSource(const std::string& path_or_url,
                                                   const OpenOptions& options = {});

}  // namespace ferry::xrd
