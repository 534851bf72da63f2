// ProxyOss: ferry's site proxy as xrootd's storage plug-in (`ofs.osslib`). XrdOfs keeps doing
// what it does for any data server (sessions, handles, the cms, monitoring); every file it opens
// is a ProxyFile reading through ferry's cache from the origin of `ferry.origin`.
//
// - Stat(path): answered from the cache entry's index while it was validated less than
//   revalidate_s ago (a warm pass never contacts the origin, as with XCache), else from the
//   origin (XrdCl stat).
// - Opendir/Readdir: the origin's listing (XrdCl dirlist), so `xrdfs ls` works through the proxy.
// - Everything that modifies the namespace is EROFS; Features(): page reads with checksums
//   (pgRead answers from stored page CRCs). Sendfile is not disabled: a ProxyFile has no
//   descriptor of its own, but ProxySfs serves warm reads from the cache's data file through
//   XrdXrootd's SendData path (zero_copy.h).
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <XrdOss/XrdOss.hh>

namespace ferry::proxy {

class ProxyService;

class ProxyOss final : public XrdOss {
 public:
  explicit ProxyOss(ProxyService& service) : service_(service) {}

  XrdOssDF* newDir(const char* tident) override;
  XrdOssDF* newFile(const char* tident) override;
  int Init(XrdSysLogger* /*lp*/, const char* /*cfn*/) override { return 0; }
  int Stat(const char* path, struct stat* buff, int opts, XrdOucEnv* envP) override;
  uint64_t Features() override { return XRDOSS_HASPGRW; }

  int Chmod(const char*, mode_t, XrdOucEnv*) override { return -EROFS; }
  int Create(const char*, const char*, mode_t, XrdOucEnv&, int) override { return -EROFS; }
  int Mkdir(const char*, mode_t, int, XrdOucEnv*) override { return -EROFS; }
  int Remdir(const char*, int, XrdOucEnv*) override { return -EROFS; }
  int Rename(const char*, const char*, XrdOucEnv*, XrdOucEnv*) override { return -EROFS; }
  int Truncate(const char*, unsigned long long, XrdOucEnv*) override { return -EROFS; }
  int Unlink(const char*, int, XrdOucEnv*) override { return -EROFS; }

 private:
  ProxyService& service_;
};

}  // namespace ferry::proxy
