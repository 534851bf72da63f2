#include "xrd/open_source.h"

#include <algorithm>
#include <cctype>

#if FERRY_HAVE_XROOTD && FERRY_XRD_MODULE
#include <dlfcn.h>

#include <mutex>
#include <vector>

#include "base/self_exe.h"
#include "xrd/xrd_module.h"
#elif FERRY_HAVE_XROOTD
#include "xrd/xrd_source.h"
#endif

namespace ferry::xrd {
namespace {

// The lower-cased scheme of "scheme://rest", or "" when there is none.
std::string SchemeOf(std::string_view s) {
  const size_t sep = s.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    return "";
  }
  std::string scheme(s.substr(0, sep));
  const bool plain = std::all_of(scheme.begin(), scheme.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
  });
  if (!plain) {
    return "";
  }
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  return scheme;
}

#if FERRY_HAVE_XROOTD && FERRY_XRD_MODULE
// The module's entry point, loaded once: beside the binary (base/self_exe.h), then where this
// build put it.
Result<ModuleOpenFn> ModuleEntry() {
  static std::once_flag once;
  static ModuleOpenFn entry = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    std::vector<std::string> paths;
    for (const std::string& dir : LibraryDirs()) {
      paths.push_back(dir + "/" + kModuleFile);
    }
    paths.emplace_back(FERRY_XRD_MODULE_PATH);
    std::string tried;
    for (const std::string& path : paths) {
      void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (handle == nullptr) {
        const char* why = ::dlerror();
        tried += "\n  " + (why != nullptr ? std::string(why) : path + ": not loadable");
        continue;
      }
      entry = reinterpret_cast<ModuleOpenFn>(::dlsym(handle, kModuleEntry));
      if (entry != nullptr) {
        return;
      }
      tried += "\n  " + path + ": no " + kModuleEntry;
    }
    failure = std::string("cannot load the XRootD module ") + kModuleFile + ", tried:" + tried;
  });
  if (entry == nullptr) {
    return UnsupportedError(failure);
  }
  return entry;
}
#endif

}  // namespace

bool IsXrootdUrl(std::string_view path_or_url) {
  const std::string scheme = SchemeOf(path_or_url);
  return scheme == "root" || scheme == "roots" || scheme == "xroot" || scheme == "xroots";
}

Result<std::unique_ptr<io::ByteSource>> OpenSource(const std::string& path_or_url,
                                                   const OpenOptions& options) {
  const std::string scheme = SchemeOf(path_or_url);
  if (scheme.empty()) {
    return io::OpenLocal(path_or_url, options.local_mode);
  }
  if (scheme == "file") {
    // file:///abs/path (an empty authority) or file://localhost/abs/path.
    std::string rest = path_or_url.substr(7);
    if (rest.rfind("localhost/", 0) == 0) {
      rest.erase(0, 9);
    }
    if (rest.empty() || rest.front() != '/') {
      return InvalidArgumentError("file URL must name an absolute path: " + path_or_url);
    }
    return io::OpenLocal(rest, options.local_mode);
  }
  if (IsXrootdUrl(path_or_url)) {
#if FERRY_HAVE_XROOTD && FERRY_XRD_MODULE
    ModuleOpenFn open = FERRY_TRY(ModuleEntry());
    int code = 0;
    int sys_errno = 0;
    char message[2048] = {};
    io::ByteSource* source =
        open(path_or_url.c_str(), options.timeout_seconds, options.enable_plugins, &code,
             &sys_errno, message, sizeof message);
    if (source == nullptr) {
      return Error(static_cast<ErrorCode>(code), message, sys_errno);
    }
    return std::unique_ptr<io::ByteSource>(source);
#elif FERRY_HAVE_XROOTD
    XrdSourceOptions xo;
    xo.timeout_seconds = options.timeout_seconds;
    xo.enable_plugins = options.enable_plugins;
    return std::unique_ptr<io::ByteSource>(FERRY_TRY(XrdSource::Open(path_or_url, xo)));
#else
    return UnsupportedError("this ferry was built without XRootD: cannot open " + scheme + "://");
#endif
  }
  return UnsupportedError("unsupported URL scheme '" + scheme + "'");
}

}  // namespace ferry::xrd
