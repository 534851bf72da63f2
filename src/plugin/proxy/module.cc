// Entry points of libXrdFerryProxy-5.so, the library that makes a stock xrootd 5.5 server a
// ferry site cache. It is loaded twice by the same configuration (`ferry proxy config` writes
// both lines) and dlopen gives both the same copy:
//
//   ofs.osslib   /path/libXrdFerryProxy.so            -> XrdOssGetStorageSystem2 (ProxyOss)
//   xrootd.fslib /path/libXrdFerryProxy.so default    -> XrdSfsGetFileSystem2 (ProxySfs over
//                                                         XrdOfs: self-redirects, keyless sss
//                                                         logins refused)
//
// XrdOfs loads its storage plug-in while it configures itself, before the protocol asks for the
// file system head, so the service is started by the first entry point and found by the second.
// Only these functions and their version records are exported (exports.map).
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

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

// The proxy's own identity at the origin (ferry.origin_sss). XrdCl's sss client reads its
// keytab when a channel first authenticates, long after this, from XrdSecSSSKT or else
// $HOME/.xrd/sss.keytab. When the keytab is also the server's (client sss on), xrootd must
// read neither: XRootD 5.5.3's sss plug-in keeps one keytab object per process, a second one
// replaces the server's, and its protocol objects then free the old one once each (a double
// free, seen as a crash); the client side uses the server's, whose last key is the proxy's.
// cmsd, which loads this library for its existence checks, has no sss server: there the
// variable points at the keytab. XrdSecPROTOCOL keeps the origin channels to sss, so that
// they never present the account xrootd runs as (unix) instead. Nothing of the keytab is
// logged. A token (ferry.origin_token) takes the channels to ztn instead, an X.509 proxy
// (ferry.origin_x509) to gsi; neither ever to sss.
bool UseOriginCredentials(const ferry::proxy::ProxyConfig& config) {
  // NOLINTBEGIN(concurrency-mt-unsafe): set before any origin channel exists
  if (!config.origin_ca_dir.empty()) {
    ::setenv("X509_CERT_DIR", config.origin_ca_dir.c_str(), 1);
  }
  if (!config.origin_token.empty()) {
    // ztn reads the file each time a channel authenticates, over TLS only.
    ::setenv("XrdSecPROTOCOL", "ztn", 1);
    ::setenv("BEARER_TOKEN_FILE", config.origin_token.c_str(), 1);
    ::unsetenv("BEARER_TOKEN");
    return true;
  }
  if (!config.origin_x509.empty()) {
    // gsi reads the proxy file each time a channel authenticates (a renewed proxy is used by
    // the next channel). It must never make a proxy of its own from a certificate and key the
    // account xrootd runs as happens to have.
    ::setenv("XrdSecPROTOCOL", "gsi", 1);
    ::setenv("X509_USER_PROXY", config.origin_x509.c_str(), 1);
    ::setenv("XrdSecGSIUSERPROXY", config.origin_x509.c_str(), 1);  // read before X509_*
    ::setenv("XrdSecGSICREATEPROXY", "0", 1);
    return true;
  }
  // NOLINTEND(concurrency-mt-unsafe)
  if (config.origin_sss.empty()) {
    return true;
  }
  const bool in_cmsd = std::string_view(program_invocation_short_name) == "cmsd";
  // Set while xrootd configures itself, before any origin channel exists.
  // NOLINTBEGIN(concurrency-mt-unsafe)
  ::setenv("XrdSecPROTOCOL", "sss", 1);
  if (!config.origin_sss_shared || in_cmsd) {
    ::setenv("XrdSecSSSKT", config.origin_sss.c_str(), 1);
    return true;
  }
  ::unsetenv("XrdSecSSSKT");
  ::unsetenv("XrdSecsssKT");
  const char* home = ::getenv("HOME");
  // NOLINTEND(concurrency-mt-unsafe)
  struct stat st = {};
  const std::string own = std::string(home != nullptr ? home : "") + "/.xrd/sss.keytab";
  if (::stat(own.c_str(), &st) == 0) {
    Say(own + " exists: XRootD's sss client would load it over the server's keytab; remove it");
    return false;
  }
  return true;
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
    if (!UseOriginCredentials(*config)) {
      return nullptr;
    }
    auto service = ferry::proxy::ProxyService::Start(*config);
    if (!service) {
      Say("cannot use the cache directory: " + service.error().ToString());
      return nullptr;
    }
    std::string disks = config->cache.dir;
    for (size_t i = 1; i < config->data_dirs.size(); ++i) {
      disks += " " + config->data_dirs[i];
    }
    Say("origin " + config->origin + (config->data_dirs.size() > 1 ? ", cache disks " : ", cache ")
        + disks
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
  try {
    return ferry::proxy::MakeProxySfs(native_fs, *service);
  } catch (const std::exception& e) {
    Say(std::string("cannot start: ") + e.what());
    return nullptr;
  }
}
