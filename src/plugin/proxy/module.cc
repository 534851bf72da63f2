// Entry points of libXrdFerryProxy-5.so, the library that makes a stock xrootd 5.5 server a
// ferry site cache. It is loaded twice by the same configuration (`ferry proxy config` writes
// both lines) and dlopen gives both the same copy:
//
//   ofs.osslib   /path/libXrdFerryProxy.so            -> XrdOssGetStorageSystem2 (ProxyOss)
//   xrootd.fslib /path/libXrdFerryProxy.so default    -> XrdSfsGetFileSystem2 (ProxySfs over
//                                                         XrdOfs: self-redirects)
//
// XrdOfs loads its storage plug-in while it configures itself, before the protocol asks for the
// file system head, so the service is started by the first entry point and found by the second.
// Only these functions and their version records are exported (exports.map).
#include <cstdio>
#include <exception>

#include <XrdSys/XrdSysLogger.hh>

#include "plugin/proxy/proxy_config.h"
#include "plugin/proxy/proxy_oss.h"
#include "plugin/proxy/proxy_sfs.h"
#include "plugin/proxy/service.h"

#include <XrdOss/XrdOss.hh>
#include <XrdSfs/XrdSfsInterface.hh>
#include <XrdVersion.hh>

namespace {

// xrootd's log is this process's stderr (-l redirects it): messages go there.
void Say(const std::string& what) {
  std::fprintf(stderr, "ferry proxy: %s\n", what.c_str());
}

}  // namespace

#pragma GCC visibility push(default)
XrdVERSIONINFO(XrdOssGetStorageSystem2, XrdFerryProxy)
    XrdVERSIONINFO(XrdSfsGetFileSystem2, XrdFerryProxy)
#pragma GCC visibility pop

        extern "C"
    __attribute__((visibility("default"))) XrdOss* XrdOssGetStorageSystem2(XrdOss* /*native_oss*/,
                                                                           XrdSysLogger* /*logger*/,
                                                                           const char* config_fn,
                                                                           const char* /*parms*/,
                                                                           XrdOucEnv* /*env*/) {
  try {
    if (config_fn == nullptr) {
      Say("no configuration file: ferry.origin and ferry.dir are required");
      return nullptr;
    }
    auto config = ferry::proxy::LoadProxyConfig(config_fn);
    if (!config) {
      Say(config.error().ToString());
      return nullptr;
    }
    auto service = ferry::proxy::ProxyService::Start(*config);
    if (!service) {
      Say("cannot use the cache directory: " + service.error().ToString());
      return nullptr;
    }
    Say("origin " + config->origin + ", cache " + config->cache.dir
        + (config->redirects() ? ", self-redirects to " + config->self : ", no self-redirects"));
    return new ferry::proxy::ProxyOss(**service);
  } catch (const std::exception& e) {
    Say(std::string("cannot start: ") + e.what());
    return nullptr;
  }
}

extern "C" __attribute__((visibility("default"))) XrdSfsFileSystem* XrdSfsGetFileSystem2(
    XrdSfsFileSystem* native_fs,
    XrdSysLogger* /*logger*/,
    const char* /*config_fn*/,
    XrdOucEnv* /*env*/) {
  ferry::proxy::ProxyService* service = ferry::proxy::ProxyService::Get();
  if (native_fs == nullptr || service == nullptr) {
    Say("xrootd.fslib needs 'default' below it and ofs.osslib naming this same library");
    return nullptr;
  }
  if (!service->config().redirects()) {
    return native_fs;  // nothing to add
  }
  try {
    return ferry::proxy::MakeProxySfs(native_fs, *service);
  } catch (const std::exception& e) {
    Say(std::string("cannot start: ") + e.what());
    return nullptr;
  }
}
